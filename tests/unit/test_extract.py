"""The demo profile applied offline to every page the demo shop renders, against its truth."""

from __future__ import annotations

from decimal import Decimal

from scrapy.http import HtmlResponse

from recordhound.demo.catalog import Catalog
from recordhound.demo.site import build_site
from recordhound.demo.truth import build_truth
from recordhound.normalize import normalize_release
from recordhound.sources import load_profile
from recordhound.sources.extract import extract_links, extract_release
from recordhound.text import name_key

BASE = "http://127.0.0.1:8070"


def _response(site: dict, path: str) -> HtmlResponse:  # type: ignore[type-arg]
    page = site[path]
    return HtmlResponse(BASE + path, body=page.body, headers={"Content-Type": page.content_type})


def test_every_product_page_normalizes_to_its_truth() -> None:
    catalog = Catalog(150, seed=5)
    site, truth, profile = build_site(catalog), build_truth(catalog), load_profile("demo")
    for offer in truth["offers"]:
        outcome = normalize_release(extract_release(_response(site, offer["path"]), profile), profile)
        release = outcome.release
        assert release is not None, offer
        assert release.external_id == offer["external_id"]
        assert release.title == offer["title"]
        assert [name_key(a) for a in release.artists] == [name_key(a) for a in offer["artists"]]
        assert sorted(name_key(s) for s in release.styles) == sorted(name_key(s) for s in offer["styles"])
        assert (release.label, release.year) == (offer["label"], offer["year"])
        assert release.price == (offer["price"] and Decimal(offer["price"]))
        assert release.currency == offer["currency"]
        assert release.in_stock is offer["in_stock"]


def test_untitled_product_is_rejected_with_a_reason() -> None:
    catalog = Catalog(50, seed=1)
    site, profile = build_site(catalog), load_profile("demo")
    outcome = normalize_release(extract_release(_response(site, catalog.rejected.path), profile), profile)
    assert outcome.release is None
    assert "title" in (outcome.rejected or "")
    assert outcome.problems[0].url.endswith(catalog.rejected.path)


def test_listing_links_by_kind() -> None:
    site, profile = build_site(Catalog(100, seed=1)), load_profile("demo")
    response = _response(site, "/catalog?page=1")
    products = extract_links(response, profile.links["product"].selectors)
    assert len(products) == 47  # 40 per page + the dead, the moved, the looping, the untitled, three unstorable
    assert extract_links(response, profile.links["pagination"].selectors) == [BASE + "/catalog?page=2"]


def test_a_page_is_undecodable_only_for_bytes_its_encoding_cannot_read() -> None:
    from recordhound.spiders.catalog import _undecodable

    def page(body: bytes) -> HtmlResponse:
        return HtmlResponse(BASE + "/x", body=body, headers={"Content-Type": "text/html; charset=utf-8"})

    assert _undecodable(page("<p>Bj\u00f6rk</p>".encode())) is None
    assert _undecodable(page("<p>a real \ufffd in the text</p>".encode())) is None  # well-formed U+FFFD
    problem = _undecodable(page(b"<p>Bj\xf6rk</p>"))  # Latin-1 bytes in a page that says UTF-8
    assert problem is not None and "offset 5" in problem and "utf-8" in problem
