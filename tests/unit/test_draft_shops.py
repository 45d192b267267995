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
from recordhound.sources.draft_shops import pagination_selector, platform, spec_fields, title_rule
from recordhound.sources.extract import extract_links
from recordhound.sources.profile import SelectorSpec


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
