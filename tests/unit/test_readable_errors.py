"""A crawl's errors are shown as words and numbers, never as a Python dict's repr; a URL in a message shows no
password."""

from __future__ import annotations

import pytest

from recordhound.db.samples import readable_error, readable_errors
from recordhound.preflight import safe_url


def test_counts_read_as_text_most_first() -> None:
    assert readable_errors({"field_price": 1, "http_404": 6}) == "7 problems: 6 × http_404, 1 × field_price"
    assert readable_errors({"rejected": 1}) == "1 problem: 1 × rejected"


def test_a_message_stored_as_a_dict_repr_by_an_older_version_is_rewritten() -> None:
    assert readable_error("7 problems: {'field_price': 1, 'http_404': 6}") == "7 problems: 6 × http_404, 1 × field_price"
    assert readable_error("crawl health: pages fetched: fetched no page") == "crawl health: pages fetched: fetched no page"
    assert readable_error("2 problems: {not a dict") == "2 problems: {not a dict"
    assert readable_error(None) == ""


@pytest.mark.parametrize(("url", "said"), [
    ("redis://u:pw@127.0.0.1:6379/0", "redis://u:***@127.0.0.1:6379/0"),
    ("redis://:p@ssW0rd@127.0.0.1:1/0", "redis://:***@127.0.0.1:1/0"),  # an unescaped @: redis-py reads p@ssW0rd
    ("redis://127.0.0.1:1/0?db=1&password=qsecret&ssl=true", "redis://127.0.0.1:1/0?db=1&password=***&ssl=true"),
    ("postgresql+psycopg://a:b@h/db?sslmode=require", "postgresql+psycopg://a:***@h/db?sslmode=require"),
    ("postgresql+psycopg://nobody@127.0.0.1:1/catalog", "postgresql+psycopg://nobody@127.0.0.1:1/catalog"),
    ("sqlite:////tmp/a@b.sqlite3", "sqlite:////tmp/a@b.sqlite3"),
])
def test_a_url_in_a_message_shows_no_password(url: str, said: str) -> None:
    assert safe_url(url) == said
