"""A crawl's errors are shown as words and numbers, never as a Python dict's repr."""

from __future__ import annotations

from recordhound.db.samples import readable_error, readable_errors


def test_counts_read_as_text_most_first() -> None:
    assert readable_errors({"field_price": 1, "http_404": 6}) == "7 problems: 6 × http_404, 1 × field_price"
    assert readable_errors({"rejected": 1}) == "1 problem: 1 × rejected"


def test_a_message_stored_as_a_dict_repr_by_an_older_version_is_rewritten() -> None:
    assert readable_error("7 problems: {'field_price': 1, 'http_404': 6}") == "7 problems: 6 × http_404, 1 × field_price"
    assert readable_error("crawl health: pages fetched: fetched no page") == "crawl health: pages fetched: fetched no page"
    assert readable_error("2 problems: {not a dict") == "2 problems: {not a dict"
    assert readable_error(None) == ""
