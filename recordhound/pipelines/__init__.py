"""Item pipelines: normalize (100) → store (500)."""
