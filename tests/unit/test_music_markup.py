"""Record-shop markup: several offers per page (MusicAlbum.albumRelease[], Product.offers[],
AggregateOffer, hasVariant, an ``offers:`` block), gtin barcodes, Open Graph / product meta tags
and loose itemprops as fallbacks, and title rules that split "CATNO // Artist - Title".

Pages are written for these tests (shapes as shops publish them); expected values are the
pages' own."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from scrapy.http import HtmlResponse

from recordhound import music
from recordhound.exceptions import ProfileError
from recordhound.normalize import normalize_release
from recordhound.sources import load_profile
from recordhound.sources.extract import extract_release
from recordhound.sources.profile import Profile

SCHEMA = "https://schema.org/"


def _page(ld: Any = None, head: str = "", body: str = "") -> HtmlResponse:
    script = f'<script type="application/ld+json">{json.dumps(ld)}</script>' if ld is not None else ""
    html = f"<html><head>{script}{head}</head><body>{body}</body></html>"
    return HtmlResponse("https://label.example/album/common-assault", body=html.encode(), encoding="utf-8")


def _profile(tmp_path: Path, **extra: Any) -> Profile:
    document = {"name": "s", "base_url": "https://label.example/", "start_urls": ["/"],
                "links": {"product": "a::attr(href)"}, **extra}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return load_profile(str(path))


def _offers(profile: Profile, page: HtmlResponse) -> list[tuple[Any, ...]]:
    outcome = normalize_release(extract_release(page, profile), profile)
    assert outcome.release is not None, outcome
    return [(o.external_id, o.format, o.condition, o.media_grade, o.sleeve_grade, o.price, o.currency,
             o.availability, o.barcode) for o in outcome.release.offers]


ALBUM = {
    "@context": "https://schema.org", "@type": "MusicAlbum", "@id": "https://label.example/album/common-assault",
    "name": "FLD001 // Gareth Wild - Common Assault EP",
    "publisher": {"@type": "MusicGroup", "name": "Fold Records"}, "datePublished": "04 Mar 2016 00:00:00 GMT",
    "albumRelease": [
        {"@type": ["MusicRelease", "Product"], "@id": "https://label.example/album/common-assault#vinyl",
         "name": "12\" Vinyl", "musicReleaseFormat": "VinylFormat", "catalogNumber": "FLD001",
         "gtin13": "0724384960650",
         "offers": {"@type": "Offer", "price": 12.0, "priceCurrency": "EUR",
                    "availability": "https://schema.org/SoldOut"}},
        {"@type": ["MusicRelease", "Product"], "@id": "https://label.example/album/common-assault",
         "name": "Common Assault EP", "musicReleaseFormat": "DigitalFormat",
         "offers": {"@type": "Offer", "price": 6.0, "priceCurrency": "EUR",
                    "availability": "https://schema.org/InStock"}},
    ],
}


def test_bandcamp_like_album_gives_one_offer_per_format_and_splits_the_title(tmp_path: Path) -> None:
    profile = _profile(tmp_path, structured="schema.org", title_rules=["catno_slashes_artist_title"])
    outcome = normalize_release(extract_release(_page(ALBUM), profile), profile)
    release = outcome.release
    assert release is not None
    assert (release.title, release.artists, release.catalog_number, release.label, release.year) == (
        "Common Assault EP", ["Gareth Wild"], "FLD001", "Fold Records", 2016)
    assert [(o.external_id, o.format, o.price, o.currency, o.availability, o.barcode) for o in release.offers] == [
        ("https://label.example/album/common-assault#vinyl", '12"', Decimal("12.00"), "EUR", "sold_out",
         "0724384960650"),
        ("https://label.example/album/common-assault", "Digital", Decimal("6.00"), "EUR", "in_stock", None)]


def test_without_a_title_rule_the_name_is_kept_as_it_is(tmp_path: Path) -> None:
    profile = _profile(tmp_path, structured="schema.org")
    outcome = normalize_release(extract_release(_page({**ALBUM, "byArtist": {"name": "X"}}), profile), profile)
    assert outcome.release is not None and outcome.release.title == ALBUM["name"]


def test_marketplace_product_offers_with_conditions_and_grades(tmp_path: Path) -> None:
    def copy(sku: str, price: str, media: str, sleeve: str) -> dict[str, Any]:
        return {"@type": "Offer", "sku": sku, "price": price, "priceCurrency": "GBP",
                "itemCondition": f"{SCHEMA}UsedCondition", "availability": f"{SCHEMA}InStock",
                "additionalProperty": [{"@type": "PropertyValue", "name": "Media condition", "value": media},
                                       {"@type": "PropertyValue", "name": "Sleeve condition", "value": sleeve}]}
    ld = {"@context": "https://schema.org", "@type": "Product", "name": "Selected Ambient Works 85-92",
          "byArtist": "Aphex Twin", "gtin13": "0724384960650", "offers": {
              "@type": "AggregateOffer", "lowPrice": "18.00", "priceCurrency": "GBP", "offers": [
                  copy("c1", "18.00", "Very Good Plus (VG+)", "Very Good (VG)"),
                  copy("c2", "32.50", "Near Mint (NM or M-)", "Near Mint (NM or M-)")]}}
    profile = _profile(tmp_path, structured="schema.org")
    assert _offers(profile, _page(ld)) == [
        ("c1", None, "used", "VG+", "VG", Decimal("18.00"), "GBP", "in_stock", "0724384960650"),
        ("c2", None, "used", "NM", "NM", Decimal("32.50"), "GBP", "in_stock", "0724384960650")]


def test_product_group_variants_each_with_barcode(tmp_path: Path) -> None:
    ld = {"@context": "https://schema.org", "@type": "ProductGroup", "name": "Blue Lines",
          "brand": {"name": "Wild Bunch"}, "byArtist": "Massive Attack", "hasVariant": [
              {"@type": "Product", "sku": "BL-LP", "name": "Blue Lines - LP", "gtin13": "0724384960650",
               "offers": {"@type": "Offer", "price": "27.99", "priceCurrency": "EUR",
                          "availability": f"{SCHEMA}PreOrder"}},
              {"@type": "Product", "sku": "BL-CD", "name": "Blue Lines - CD", "gtin13": "0724384960643",
               "offers": {"@type": "Offer", "price": "11.99", "priceCurrency": "EUR",
                          "availability": f"{SCHEMA}InStock", "itemCondition": f"{SCHEMA}NewCondition"}}]}
    profile = _profile(tmp_path, structured="schema.org")
    assert _offers(profile, _page(ld)) == [
        ("BL-LP", "LP", None, None, None, Decimal("27.99"), "EUR", "pre_order", "0724384960650"),
        ("BL-CD", "CD", "new", None, None, Decimal("11.99"), "EUR", "in_stock", "0724384960643")]


def test_open_graph_and_loose_itemprops_are_fallbacks(tmp_path: Path) -> None:
    head = ('<meta property="og:title" content="Music For Airports">'
            '<meta property="product:price:amount" content="1234.50">'
            '<meta property="product:price:currency" content="EUR">'
            '<meta property="product:availability" content="out of stock">'
            '<meta property="product:retailer_item_id" content="EN-1">')
    body = '<p>by <span itemprop="byArtist">Brian Eno</span></p><span itemprop="gtin13">0724384960650</span>'
    profile = _profile(tmp_path, structured="schema.org", fields={"artists": "[itemprop=byArtist]::text"})
    outcome = normalize_release(extract_release(_page(head=head, body=body), profile), profile)
    release = outcome.release
    assert release is not None, outcome
    assert (release.external_id, release.title, release.price, release.currency, release.in_stock,
            release.availability, release.barcode) == (
        "EN-1", "Music For Airports", Decimal("1234.50"), "EUR", False, "sold_out", "0724384960650")


def test_an_offers_block_reads_each_copy(tmp_path: Path) -> None:
    body = """<h1>Tago Mago</h1><p class="artist">Can</p><ul class="copies">
      <li data-id="u1"><span class="fmt">2xLP</span><span class="cond">Used</span><span class="media">VG+</span>
          <span class="sleeve">G+</span><b>€ 45,00</b><i>in stock</i></li>
      <li data-id="n1"><span class="fmt">2 x LP</span><span class="cond">New</span><b>€ 29,99</b><i>Sold out</i></li>
    </ul>"""
    profile = _profile(tmp_path, fields={"title": "h1::text", "artists": ".artist::text"}, offers={
        "each": "ul.copies li", "fields": {
            "external_id": "::attr(data-id)", "format": ".fmt::text", "condition": ".cond::text",
            "media_grade": ".media::text", "sleeve_grade": ".sleeve::text", "price": "b::text",
            "availability": "i::text"}})
    assert _offers(profile, _page(body=body)) == [
        ("u1", "2xLP", "used", "VG+", "G+", Decimal("45.00"), "EUR", "in_stock", None),
        ("n1", "2xLP", "new", None, None, Decimal("29.99"), "EUR", "sold_out", None)]


@pytest.mark.parametrize(("text", "rule", "expected"), [
    ("FLD001 // Gareth Wild - Common Assault EP", "catno_slashes_artist_title",
     {"catalog_number": "FLD001", "artists": "Gareth Wild", "title": "Common Assault EP"}),
    ("Gareth Wild - Common Assault EP [FLD001]", "artist_title_catno",
     {"catalog_number": "FLD001", "artists": "Gareth Wild", "title": "Common Assault EP"}),
    ("[WARP CD92] Aphex Twin - Selected Ambient Works", "catno_artist_title",
     {"catalog_number": "WARP CD92", "artists": "Aphex Twin", "title": "Selected Ambient Works"}),
])
def test_bundled_title_rules(text: str, rule: str, expected: dict[str, str]) -> None:
    from recordhound.sources.title_rules import compile_rule, split_title

    assert split_title(text, (compile_rule(rule),)) == expected


@pytest.mark.parametrize(("rules", "problem"), [
    (["(?P<artists>.+) - (?P<name>.+)"], "named group 'title'"),
    (["(unclosed"], "not a bundled rule"),
])
def test_bad_title_rules_are_profile_errors(tmp_path: Path, rules: list[str], problem: str) -> None:
    with pytest.raises(ProfileError, match=problem):
        _profile(tmp_path, structured="schema.org", title_rules=rules)


@pytest.mark.parametrize(("text", "expected"), [
    ('12" Vinyl', '12"'), ("2xLP", "2xLP"), ("Double LP", "2xLP"), ("LP", "LP"), ('7" Single', '7"'),
    ("Compact Disc", "CD"), ("Cassette", "Cassette"), ("Digital Album", "Digital"), ("Box Set", "Box Set"),
    (f"{SCHEMA}CDFormat", "CD"), ("Poster", None),
])
def test_format_names(text: str, expected: str | None) -> None:
    assert music.format_name(text) == expected


def test_country_and_barcode_of_a_release(tmp_path: Path) -> None:
    ld = {"@context": "https://schema.org", "@type": ["Product", "MusicRelease"], "name": "Tago Mago",
          "byArtist": "Can", "countryOfOrigin": "Germany", "gtin13": "0724384960650",
          "offers": {"@type": "Offer", "price": "29.99", "priceCurrency": "EUR"}}
    profile = _profile(tmp_path, structured="schema.org")
    release = normalize_release(extract_release(_page(ld), profile), profile).release
    assert release is not None and (release.country, release.barcode) == ("Germany", "0724384960650")
    assert [o.barcode for o in release.all_offers()] == ["0724384960650"]
