"""The catalog layer: one batch of items through validation and the review gate into the
product DB, and the review queue told what happened. It may import ``db`` and ``review``;
``db`` imports neither (``tests/unit/test_layers.py``)."""
