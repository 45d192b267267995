"""Where shops meet on one release, on SQLite and PostgreSQL: a catalogue number alone does not merge
two different records, the order shops are crawled in does not decide what matches, a second shop
does not rewrite the first shop's record on every crawl, a price that did not parse does not erase
the known one, and a UPC-A matches its EAN-13."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from recordhound.catalog.writer import CatalogWriter
from recordhound.items import Release
from recordhound.db.sources import ensure_source
from recordhound.normalize import normalize_release
from recordhound.sources.extract import extract_release

from tests.integration.test_offers_per_format import CD, LP, _album, _rows, writer  # noqa: F401 (fixture)
from tests.unit.test_music_markup import _page, _profile


def _sources(writer: CatalogWriter, names: str) -> dict[str, int]:
    return {name: ensure_source(writer.engine, name, "html", f"http://{name}/") for name in names}


def _release_of(writer: CatalogWriter) -> dict[str, int]:
    return dict(_rows(writer, "SELECT external_id, release_id FROM offers"))  # type: ignore[arg-type]


def test_the_same_catalogue_number_on_another_record_of_the_label_is_another_release(writer: CatalogWriter) -> None:
    sources = _sources(writer, "ab")
    writer.write(sources["a"], [_album("12.00", "8.00", barcodes=(None, None))])
    other = _album("15.00", "9.00", shop="b", title="Night Drive", barcodes=(None, None))
    other.artists = ["Someone Else"]  # the shop printed the label's catalogue number on another record
    writer.write(sources["b"], [other])
    by_offer = _release_of(writer)
    assert by_offer["a-lp"] == 1 and by_offer["b-lp"] == 2
    assert _rows(writer, "SELECT id, title FROM releases ORDER BY id") == [(1, "Common Assault EP"), (2, "Night Drive")]


@pytest.mark.parametrize("first", ["numbered", "unnumbered"])
def test_matching_does_not_depend_on_which_shop_came_first(writer: CatalogWriter, first: str) -> None:
    sources = _sources(writer, "ab")
    numbered = _album("12.00", "8.00", barcodes=(None, None))
    unnumbered = _album("13.00", "9.00", shop="b", catno=None, label=None, barcodes=(None, None))
    order = [(sources["a"], numbered), (sources["b"], unnumbered)]
    for source, item in (order if first == "numbered" else order[::-1]):
        writer.write(source, [item])
    assert set(_release_of(writer).values()) == {1}
    assert _rows(writer, "SELECT id, catalog_number FROM releases") == [(1, "FLD001")]


def test_a_second_shop_does_not_rewrite_the_first_shops_record_on_every_crawl(writer: CatalogWriter) -> None:
    sources = _sources(writer, "ab")
    first = _album("12.00", "8.00")
    second = _album("13.00", "9.00", shop="b", title="Common Assault", catno="FLD-001")
    second.styles = ["Acid"]
    for _ in range(2):  # the first crawl of each shop, then a re-crawl of both
        counts = [writer.write(sources["a"], [first]).counts, writer.write(sources["b"], [second]).counts]
    assert [c["releases_changed"] for c in counts] == [0, 0]  # nothing moved on the re-crawl
    assert _rows(writer, "SELECT id, title, catalog_number FROM releases") == [(1, "Common Assault EP", "FLD001")]
    assert _rows(writer, "SELECT s.name FROM release_styles rs JOIN styles s ON s.id = rs.style_id") == [("Techno",)]


def test_a_price_that_did_not_parse_keeps_the_known_one_and_the_next_jump_waits_for_review(
        writer: CatalogWriter) -> None:
    source = _sources(writer, "a")["a"]
    writer.write(source, [_album("12.00", "8.00")])
    unparsed = _album("12.00", "8.00")
    unparsed.offers[0].price, unparsed.offers[0].currency = None, None  # "call for price", a broken template
    writer.write(source, [unparsed])
    assert _rows(writer, "SELECT external_id, price FROM offers ORDER BY id")[0][1] is not None
    jumped = writer.write(source, [_album("18.00", "8.00")])  # +50 % on the known 12.00
    assert jumped.counts["prices_held"] == 1 and jumped.counts["price_changes"] == 0
    prices = [(e, Decimal(str(p))) for e, p in _rows(writer, "SELECT external_id, price FROM offers ORDER BY id")]
    assert prices == [("a-lp", Decimal("12.00")), ("a-cd", Decimal("8.00"))]
    assert _rows(writer, "SELECT count(*) FROM offer_history") == [(0,)]


def test_a_upc_a_and_its_ean_13_are_one_release(writer: CatalogWriter, tmp_path: Path) -> None:
    sources = _sources(writer, "ab")
    writer.write(sources["a"], [_album("12.00", "8.00", catno=None, label=None)])  # LP: an EAN-13
    page = _page({"@context": "https://schema.org", "@type": "Product", "name": "Common Assault",
                  "byArtist": {"@type": "MusicGroup", "name": "Gareth Wild"},
                  "gtin12": LP[1:], "offers": {"@type": "Offer", "price": "14.00", "priceCurrency": "EUR"}})
    profile = _profile(tmp_path, structured="schema.org")
    outcome = normalize_release(extract_release(page, profile), profile)  # the shop prints the UPC-A
    assert outcome.release is not None, outcome
    writer.write(sources["b"], [outcome.release])
    assert set(_release_of(writer).values()) == {1}
    assert [code for code, in _rows(writer, "SELECT barcode FROM offers ORDER BY id")] == [LP, CD, LP]


def test_a_stock_state_that_was_not_read_keeps_the_known_one(writer: CatalogWriter) -> None:
    source = _sources(writer, "a")["a"]
    states = ["in_stock", "sold_out", None, "in_stock"]  # the third crawl could not read the stock
    for state in states:
        album = _album("12.00", "8.00")
        album.offers[0].availability = state
        writer.write(source, [album])
    assert _rows(writer, "SELECT o.external_id, s.old_availability, s.new_availability FROM stock_changes s "
                         "JOIN offers o ON o.id = s.offer_id ORDER BY s.id") == [
        ("a-lp", "in_stock", "sold_out"), ("a-lp", "sold_out", "in_stock")]  # back in stock: one transition


def test_the_same_title_and_artists_match_only_with_the_same_year_or_both_undated(writer: CatalogWriter) -> None:
    sources = _sources(writer, "abcde")

    def record(shop: str, year: int | None) -> Release:
        item = _album("12.00", "8.00", shop=shop, catno=None, label=None, barcodes=(None, None))
        item.year = year  # no catalogue number, label or barcode: title + year + artists decide
        return item

    for shop, year in (("a", None), ("b", 1999), ("c", None), ("d", 1999)):
        writer.write(sources[shop], [record(shop, year)])
    writer.write(sources["e"], [record("e", 1999), record("f", None)])  # both kinds in one batch
    assert _release_of(writer) == {"a-lp": 1, "a-cd": 1, "b-lp": 2, "b-cd": 2, "c-lp": 1, "c-cd": 1,
                                   "d-lp": 2, "d-cd": 2, "e-lp": 2, "e-cd": 2, "f-lp": 1, "f-cd": 1}
    assert _rows(writer, "SELECT id, year FROM releases ORDER BY id") == [(1, None), (2, 1999)]
