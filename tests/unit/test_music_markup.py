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
from recordhound.db.sources import ensure_source
from recordhound.exceptions import ProfileError
from recordhound.normalize import normalize_release
from recordhound.sources import load_profile
from recordhound.sources.extract import extract_release
from tests.catalog_writer import rows, trusted_writer
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
    # a physical format named anywhere wins over the download that comes with it
    ("Vinyl LP + Download Code", "LP"), ("180g Vinyl LP with free MP3", "LP"), ("2LP + Digital Download", "2xLP"),
    ("CD + Digital Album", "CD"), ('12" + MP3 Download', '12"'), ("Cassette incl. Download", "Cassette"),
    ("Download (MP3 + FLAC)", "Digital"), ("Digital Download", "Digital"),
    # discs counted wherever the number stands; a box set stays a box set
    ("Boxset 5CD", "Box Set"), ("Deluxe Edition 2CD", "2xCD"), ("Gatefold 3 x LP", "3xLP"),
    ("Vinyl Double LP", "2xLP"), ('2x12"', '2x12"'), ('2 x 12" Vinyl', '2x12"'),
    ('Double A-Side 7"', '7"'), ("180g LP", "LP"), ("Remastered 2019 LP", "LP"), ("CDs", "CD"),
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


@pytest.mark.parametrize(("text", "expected"), [
    ("Not in stock", "sold_out"), ("Currently not in stock", "sold_out"), ("Not available", "sold_out"),
    ("Currently not available", "sold_out"), ("No longer available", "sold_out"), ("Out-of-stock", "sold_out"),
    ("Currently out of stock", "sold_out"), ("Back in stock soon", "sold_out"), ("No stock", "sold_out"),
    ("Nicht auf Lager", "sold_out"), ("Derzeit nicht auf Lager", "sold_out"), ("Nicht mehr auf Lager", "sold_out"),
    ("Nicht verfügbar", "sold_out"), ("Pas en stock", "sold_out"), ("Plus en stock", "sold_out"),
    ("Ce produit n'est pas disponible", "sold_out"), ("Niet op voorraad", "sold_out"),
    ("Niet meer leverbaar", "sold_out"), ("No disponible", "sold_out"), ("Sin stock", "sold_out"),
    ("Non disponibile", "sold_out"), ("Esaurito", "sold_out"),
    # what a shop says when it has the record
    ("In stock", "in_stock"), ("Only 2 left in stock", "in_stock"), ("Back in stock!", "in_stock"),
    ("Auf Lager", "in_stock"), ("Verfügbar", "in_stock"), ("En stock", "in_stock"), ("Op voorraad", "in_stock"),
    ("Disponible", "in_stock"), ("Disponibile", "in_stock"), ("Available", "in_stock"),
    (f"{SCHEMA}InStock", "in_stock"), (f"{SCHEMA}OutOfStock", "sold_out"), ("Pre-order", "pre_order"),
    ("Coming soon", "pre_order"), ("Ask us", None),
])
def test_availability_reads_negated_stock_wording_as_sold_out(text: str, expected: str | None) -> None:
    assert music.availability(text) == expected


def test_an_offer_not_in_stock_in_german_is_sold_out(tmp_path: Path) -> None:
    body = """<h1>Tago Mago</h1><p class="artist">Can</p><ul class="copies">
      <li data-id="lp"><span class="fmt">LP</span><b>29,99 €</b><i>Nicht auf Lager</i></li>
      <li data-id="cd"><span class="fmt">CD</span><b>12,99 €</b><i>Auf Lager</i></li></ul>"""
    profile = _profile(tmp_path, fields={"title": "h1::text", "artists": ".artist::text"},
                       price={"default_currency": "EUR"}, offers={"each": "ul.copies li", "fields": {
                           "external_id": "::attr(data-id)", "format": ".fmt::text", "price": "b::text",
                           "availability": "i::text"}})
    assert _offers(profile, _page(body=body)) == [
        ("lp", "LP", None, None, None, Decimal("29.99"), "EUR", "sold_out", None),
        ("cd", "CD", None, None, None, Decimal("12.99"), "EUR", "in_stock", None)]


@pytest.mark.parametrize("text", [
    "0000000000000", "000000000000", "00000000", "00000000000000", "000-0000000000",  # zeros pass the check digit
    "1111111111116", "2222222222222", "8888888888888", "555555555555", "55555555", "01111111111116",
])
def test_placeholder_barcodes_are_no_barcodes(text: str) -> None:
    assert music.barcode(text) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("0724384960650", "0724384960650"), ("724384960650", "0724384960650"), ("00724384960650", "0724384960650"),
    ("4006381333931", "4006381333931"), ("96385074", "96385074"), ("5 099902 894423", "5099902894423"),
])
def test_real_barcodes_are_kept(text: str, expected: str) -> None:
    assert music.barcode(text) == expected


def _tago_mago(sku: str, barcode: str, title: str, artist: str, price: str) -> dict[str, Any]:
    return {"@context": "https://schema.org", "@type": "Product", "name": title, "byArtist": artist, "sku": sku,
            "gtin13": barcode, "offers": {"@type": "Offer", "price": price, "priceCurrency": "EUR"}}


def test_a_placeholder_barcode_is_a_problem_and_merges_no_releases(tmp_path: Path) -> None:
    profile = _profile(tmp_path, structured="schema.org")
    outcomes = [normalize_release(extract_release(_page(_tago_mago(*args)), profile), profile) for args in (
        ("A1", "0000000000000", "Tago Mago", "Can", "29.99"),
        ("B2", "0000000000000", "Blue Lines", "Massive Attack", "19.99"))]
    releases = [o.release for o in outcomes if o.release is not None]
    assert [r.barcode for r in releases] == [None, None]
    assert [[p.field for p in o.problems] for o in outcomes] == [["barcode"], ["barcode"]]
    writer = trusted_writer(tmp_path)
    source = ensure_source(writer.engine, "s", "html", "https://label.example/")
    writer.write(source, releases[:1])
    writer.write(source, releases[1:])
    assert rows(writer, "select title, barcode from releases order by id") == [
        ("Tago Mago", None), ("Blue Lines", None)]
    assert rows(writer, "select o.external_id, r.title from offers o join releases r on r.id = o.release_id"
                         " order by o.id") == [("A1", "Tago Mago"), ("B2", "Blue Lines")]



@pytest.mark.parametrize("text", [
    "In stock - ships soon", "In stock, restock soon", "En stock - livraison bientôt",
    "Op voorraad, binnenkort verzonden",
    "Auf Lager - bald bei dir", "In stock — not available for international shipping",
    "In stock online, not available in store",
])
def test_a_leading_in_stock_is_not_undone_by_a_later_clause(text: str) -> None:
    assert music.availability(text) == "in_stock"


@pytest.mark.parametrize("text", [
    "In stock soon", "Soon in stock", "Expected in stock soon", "Bald auf Lager", "Bientôt en stock",
    "Binnenkort op voorraad", "In stock again soon", "Wieder bald auf Lager", "Nachschub bald auf Lager",
    "Available soon", "Bald lieferbar", "Bientôt disponible",
])
def test_in_stock_soon_is_not_in_stock(text: str) -> None:
    assert music.availability(text) == "sold_out"
