"""Reading one sitemap: whole, gzipped, or cut off / corrupt (an error naming it, never a partial read)."""

from __future__ import annotations

import gzip

import pytest
from scrapy.http import Response

from recordhound.exceptions import CutOffError, FieldError
from recordhound.sources.sitemaps import read_sitemap

URLS = [f"https://shop.example/products/record-{n}" for n in range(40)]
XML = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
       + "".join(f"<url><loc>{u}</loc><lastmod>2026-01-0{n % 9 + 1}</lastmod></url>" for n, u in enumerate(URLS))
       + "</urlset>\n").encode()
WHERE = "https://shop.example/sitemap_products_1.xml"


def _read(body: bytes) -> list[str]:
    return [entry.url for entry in read_sitemap(Response(WHERE, body=body)).entries]


def test_a_whole_sitemap_plain_or_gzipped_or_in_two_gzip_members_gives_every_url() -> None:
    assert _read(XML) == _read(gzip.compress(XML)) == URLS
    half = len(XML) // 2
    assert _read(gzip.compress(XML[:half]) + gzip.compress(XML[half:])) == URLS


@pytest.mark.parametrize("body, says", [
    (XML[:len(XML) // 2], "XML is broken or cut off"),
    (gzip.compress(XML)[:-30], "gzip data is truncated"),
    (gzip.compress(XML)[:40] + b"\xff" * 20 + gzip.compress(XML)[60:], "gzip data is corrupt"),
])
def test_a_cut_or_corrupt_sitemap_is_an_error_naming_it(body: bytes, says: str) -> None:
    with pytest.raises(CutOffError) as raised:
        _read(body)
    assert WHERE in str(raised.value) and says in str(raised.value)


def test_a_page_that_is_no_sitemap_is_not_a_cut_off_one() -> None:
    with pytest.raises(FieldError) as raised:
        _read(b"<html><body>Shop</body></html>")
    assert not isinstance(raised.value, CutOffError) and "not a sitemap" in str(raised.value)


def test_a_robots_txt_retry_after_is_waited_within_its_cap() -> None:
    from recordhound.robots import RETRY_AFTER_CAP_SECONDS, _retry_after
    assert [_retry_after(None, 1), _retry_after("5", 1), _retry_after("3600", 2), _retry_after("-1", 1),
            _retry_after("Wed, 21 Oct 2026 07:28:00 GMT", 2), _retry_after("nan", 1), _retry_after("inf", 2)] == [
        1.0, 5.0, RETRY_AFTER_CAP_SECONDS, 0.0, 2.0, 1.0, 2.0]
