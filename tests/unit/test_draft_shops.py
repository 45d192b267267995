"""What ``profile draft`` recognises on listings as real shops write them: pagination in the head,
by class, by link text in the shop's language, as path pages and as query pages; platforms; spec
tables; product names holding artists and catalogue numbers. Pages written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from scrapy.http import HtmlResponse

from recordhound.exceptions import ProfileError
from recordhound.sources import load_profile
from recordhound.sources import woocommerce
from recordhound.sources.draft_shops import (STORE_API_PROBE, pagination_selector, platform, spec_fields,
                                             store_api_probes, title_rule)
from recordhound.sources.extract import extract_links
from recordhound.sources.profile import SelectorSpec
from recordhound.sources.shopify import product_json_url, product_page_url


def _page(body: str, head: str = "", url: str = "https://shop.example/browse/", body_class: str = "") -> HtmlResponse:
    html = f'<html><head>{head}</head><body class="{body_class}">{body}</body></html>'
    return HtmlResponse(url, body=html.encode(), encoding="utf-8")


PRODUCTS = "".join(f'<a href="/p/{n}">Record {n}</a>' for n in range(3))


@pytest.mark.parametrize(("head", "body", "url", "next_url"), [
    ('<link rel="next" href="page-2.html">', f'{PRODUCTS}<a href="page-2.html">mehr</a>',
     "https://shop.example/browse/", "https://shop.example/browse/page-2.html"),
    ("", f'{PRODUCTS}<a class="next page-numbers" href="/shop/page/3/">→</a><a class="page-numbers" href="/shop/page/1/">1</a>',
     "https://shop.example/shop/page/2/", "https://shop.example/shop/page/3/"),
    ("", f'{PRODUCTS}<a href="/browse/page-2.html">mehr</a>', "https://shop.example/browse/",
     "https://shop.example/browse/page-2.html"),
    ("", f'{PRODUCTS}<a href="?p=2">Weiter</a>', "https://shop.example/list.html", "https://shop.example/list.html?p=2"),
    ("", f'{PRODUCTS}<a href="/catalog/2/">2</a><a href="/catalog/page/2/">2</a>', "https://shop.example/catalog/",
     "https://shop.example/catalog/page/2/"),
    ("", f'{PRODUCTS}<a href="/list?offset=20">20</a><a href="/list?offset=40">40</a>', "https://shop.example/list",
     "https://shop.example/list?offset=20"),
    ("", f'{PRODUCTS}<a href="/liste?start=2">Suivant</a>', "https://shop.example/liste", "https://shop.example/liste?start=2"),
])
def test_pagination_as_shops_write_it(head: str, body: str, url: str, next_url: str) -> None:
    found = pagination_selector(_page(body, head, url))
    assert found is not None
    selector, _ = found
    kind = "xpath" if selector.startswith("/") else "css"
    assert extract_links(_page(body, head, url), (SelectorSpec(kind, selector),))[0] == next_url


def test_no_pagination_is_none() -> None:
    assert pagination_selector(_page(PRODUCTS)) is None


def test_platforms() -> None:
    assert platform([_page("", '<script src="https://cdn.shopify.com/s/x.js"></script>')]) == "shopify"
    assert platform([_page("", body_class="single-product woocommerce")]) == "woocommerce"
    assert platform([_page("", '<meta name="generator" content="Bandcamp">')]) == "bandcamp"
    assert platform([_page(PRODUCTS)]) is None


def test_spec_table_rows_become_fields() -> None:
    rows = ("<table><tr><th>Label</th><td>Fold Records</td></tr><tr><th>Cat. No.</th><td>FLD001</td></tr>"
            "<tr><th>Genre</th><td><a>Techno</a>, <a>House</a></td></tr><tr><th>Colour</th><td>Black</td></tr></table>")
    fields = spec_fields([_page(rows)], skip=set())
    assert set(fields) == {"label", "catalog_number", "styles"}
    assert _page(rows).xpath(fields["styles"]).getall() == ["Techno", "House"]


def test_title_rules_need_agreement_with_the_artists() -> None:
    titles = ["FLD001 // Gareth Wild - Common Assault EP", "FLD002 // Ø - Lines"]
    assert title_rule(titles, [["Gareth Wild"], []]) == "catno_slashes_artist_title"
    assert title_rule(["Love - Live", "Blue - Lines"], [["Someone"], ["Else"]]) is None
    assert title_rule(["Love - Live", "Blue - Lines"], [["Love"], ["Blue"]]) == "artist_title"


def _profile(tmp_path: Path, **extra: object) -> Path:
    document = {"name": "s", "base_url": "https://shop.example/", "start_urls": ["/"],
                "links": {"product": "a::attr(href)"}, "structured": "schema.org", **extra}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_profile_blocks_for_real_shops(tmp_path: Path) -> None:
    profile = load_profile(str(_profile(
        tmp_path, sitemap={"urls": ["/sitemap.xml"], "follow": ["/products/"], "only": True},
        robots={"obey": False, "reason": "the shop's written permission"},
        offers={"each": "li.copy", "fields": {"price": ".price::text"}})))
    assert profile.sitemap is not None and profile.sitemap.urls == ("/sitemap.xml",) and profile.sitemap.only
    assert not profile.robots.obey and profile.offers is not None
    assert load_profile(str(_profile(tmp_path, sitemap=True))).sitemap is not None


@pytest.mark.parametrize(("extra", "problem"), [
    ({"robots": {"obey": False}}, "stated reason"),
    ({"sitemap": {"follow": ["(unclosed"]}}, "not a regular expression"),
    ({"offers": {"each": "li", "fields": {"colour": "b::text"}}}, "unknown key 'colour'"),
    ({"platform": "magento"}, "unknown platform"),
])
def test_bad_blocks_are_profile_errors(tmp_path: Path, extra: dict[str, object], problem: str) -> None:
    with pytest.raises(ProfileError, match=problem):
        load_profile(str(_profile(tmp_path, **extra)))


@pytest.mark.parametrize("page, json_url", [
    ("https://shop.example/products/a-b-1", "https://shop.example/products/a-b-1.json"),
    ("https://shop.example/products/a-b-1/?variant=3#x", "https://shop.example/products/a-b-1.json"),
    ("https://shop.example/de/products/a-b-1.json", "https://shop.example/de/products/a-b-1.json"),
])
def test_a_shopify_product_is_read_from_its_json(page: str, json_url: str) -> None:
    assert product_json_url(page) == json_url
    assert product_page_url(json_url) == json_url.removesuffix(".json")


def test_a_woocommerce_listing_probes_its_store_api_on_its_own_host_only() -> None:
    body = ('<html><head><link rel="https://api.w.org/" href="https://cdn.example/wp-json/">'
            '<link rel="https://api.w.org/" href="/shop-root/wp-json/"></head><body class="woocommerce"></body></html>')
    listing = HtmlResponse("https://records.example/de/shop/page/2/", body=body.encode(), encoding="utf-8")
    assert store_api_probes(listing) == [
        "https://records.example/shop-root/" + STORE_API_PROBE, "https://records.example/de/" + STORE_API_PROBE]
    plain = HtmlResponse("https://records.example/shop/", body=b"<html><body>shop</body></html>", encoding="utf-8")
    assert store_api_probes(plain) == []


def test_a_store_api_product_is_a_release_with_one_offer() -> None:
    product = {"id": 7, "name": "Artist – Title", "permalink": "https://s.example/product/t/", "sku": "W7",
               "prices": {"price": "2499", "currency_code": "EUR", "currency_minor_unit": 2},
               "is_in_stock": True, "is_on_backorder": True,
               "attributes": [{"name": "Künstler", "terms": [{"name": "Artist"}]},
                              {"name": "Cat. No.", "terms": [{"name": "ABC-1"}, {"name": "XYZ 2"}]},
                              {"name": "Genre", "terms": [{"name": "House"}, {"name": "Techno"}]},
                              {"name": "Format", "terms": [{"name": "2 x LP"}]}, {"name": "Colour", "terms": []}]}
    raw = woocommerce.release_of(product, "https://s.example/", "shop")
    assert (raw.url, raw.external_id, raw.artists, raw.catalog_number, raw.styles) == (
        "https://s.example/product/t/", "7", ["Artist"], "ABC-1 / XYZ 2", ["House", "Techno"])  # two numbers
    [offer] = raw.offers
    assert (offer.external_id, offer.price, offer.currency, offer.availability, offer.format) == (
        "W7", "24.99", "EUR", "pre-order", "2 x LP")
    assert woocommerce.next_page("https://s.example/wp-json/wc/store/v1/products?page=2&per_page=100", 100) == 3
    assert woocommerce.next_page("https://s.example/wp-json/wc/store/v1/products?page=3&per_page=100", 40) is None
