"""Offers per format and condition, on SQLite and PostgreSQL: a price change on one format writes
history (or waits for review, above 5 %) for that offer only; releases match across shops by
barcode, then label + catalogue number, then artists + title + year."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import text

from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.db.models import SourceSpelling
from recordhound.db.sources import ensure_source
from recordhound.items import Offer, RawOffer, RawRelease, Release
from recordhound.normalize import normalize_release
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue
from recordhound.sources import load_profile
from recordhound.sources.profile import Profile

LP, CD = "0724384960650", "0724384960643"  # valid EAN-13s


@pytest.fixture
def writer(database_url: str, tmp_path: Path) -> Iterator[CatalogWriter]:
    engine = make_engine(database_url)
    upgrade(engine)
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    yield CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=5.0))
    queue.close()
    engine.dispose()


def _album(lp: str, cd: str, *, shop: str = "a", year: int = 2016, title: str = "Common Assault EP", catno: str | None = "FLD001",
           label: str | None = "Fold Records", barcodes: tuple[str | None, str | None] = (LP, CD)) -> Release:
    url = f"http://{shop}/album"
    return Release(shop, url, f"{shop}-album", title, ["Gareth Wild"], label, catno, year, ["Techno"], offers=[
        Offer(f"{shop}-lp", url, "LP", "new", None, None, Decimal(lp), "EUR", "in_stock", barcodes[0]),
        Offer(f"{shop}-cd", url, "CD", "new", None, None, Decimal(cd), "EUR", "sold_out", barcodes[1]),
    ])


def _rows(writer: CatalogWriter, sql: str) -> list[tuple[object, ...]]:
    with writer.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(sql)).all()]


def test_a_price_change_on_one_format_is_that_offers_history_only(writer: CatalogWriter) -> None:
    source = ensure_source(writer.engine, "a", "html", "http://a/")
    assert writer.write(source, [_album("12.00", "8.00")]).counts["offers_new"] == 2
    assert writer.write(source, [_album("12.00", "8.00")]).counts["offers_unchanged"] == 2
    changed = writer.write(source, [_album("12.30", "8.00")])  # +2.5 % on the LP: written
    assert changed.counts["price_changes"] == 1
    history = _rows(writer, "SELECT o.external_id, h.old_price, h.new_price FROM offer_history h "
                            "JOIN offers o ON o.id = h.offer_id")
    assert [(e, Decimal(str(o)), Decimal(str(n))) for e, o, n in history] == [
        ("a-lp", Decimal("12.00"), Decimal("12.30"))]
    held = writer.write(source, [_album("12.30", "12.00")])  # +50 % on the CD: waits for review
    assert held.counts["prices_held"] == 1 and held.counts["price_changes"] == 0
    offers = _rows(writer, "SELECT external_id, format, condition, price, availability, barcode, in_stock "
                           "FROM offers ORDER BY id")
    assert [(e, f, c, Decimal(str(p)), a, b, bool(s)) for e, f, c, p, a, b, s in offers] == [
        ("a-lp", "LP", "new", Decimal("12.30"), "in_stock", LP, True),
        ("a-cd", "CD", "new", Decimal("8.00"), "sold_out", CD, False)]
    assert _rows(writer, "SELECT count(*) FROM offer_history") == [(1,)]


def test_releases_match_by_barcode_then_catalogue_number_then_names(writer: CatalogWriter) -> None:
    sources = {name: ensure_source(writer.engine, name, "html", f"http://{name}/") for name in "abcd"}
    writer.write(sources["a"], [_album("12.00", "8.00")])
    # another shop: another title spelling, no label, no catalogue number; one barcode in common
    writer.write(sources["b"], [_album("13.00", "9.00", shop="b", title="Common Assault", catno=None, label=None,
                                       barcodes=(None, CD))])
    # a third: no barcodes, same label and catalogue number
    writer.write(sources["c"], [_album("11.00", "7.50", shop="c", catno="FLD-001", barcodes=(None, None))])
    # a fourth: nothing but artists, title and year
    writer.write(sources["d"], [_album("11.00", "7.50", shop="d", title="Common Assault EP", catno=None,
                                       label=None, barcodes=(None, None))])
    # a fifth: the same names, another year: another release
    writer.write(sources["d"], [_album("11.00", "7.50", shop="e", title="Common Assault EP", catno=None,
                                       label=None, barcodes=(None, None), year=2017)])
    releases = _rows(writer, "SELECT o.external_id, o.release_id FROM offers o ORDER BY o.id")
    by_offer = dict(releases)  # type: ignore[arg-type]
    assert {by_offer[f"{shop}-{fmt}"] for shop in "abcd" for fmt in ("lp", "cd")} == {1}
    assert by_offer["e-lp"] == by_offer["e-cd"] == 2
    assert _rows(writer, "SELECT id, barcode, catalog_number, year FROM releases ORDER BY id") == [
        (1, LP, "FLD001", 2016), (2, None, None, 2017)]  # the first shop's record: others add, never rewrite


def test_a_release_with_two_catalogue_numbers_matches_on_either(writer: CatalogWriter) -> None:
    sources = {name: ensure_source(writer.engine, name, "html", f"http://{name}/") for name in "abc"}
    # a reissue that carries two labels' numbers; no barcodes anywhere
    writer.write(sources["a"], [_album("20.00", "12.00", title="Common Assault (Reissue)", catno="FLD001 / CAT-2",
                                       barcodes=(None, None))])
    # another shop prints only the second number, in its own spelling, under another title
    writer.write(sources["b"], [_album("21.00", "13.00", shop="b", title="Common Assault", catno="CAT 2",
                                       barcodes=(None, None))])
    # a third prints the same second number under another label: another release
    writer.write(sources["c"], [_album("21.00", "13.00", shop="c", catno="CAT-2", label="Other Label",
                                       barcodes=(None, None))])
    by_offer = dict(_rows(writer, "SELECT external_id, release_id FROM offers"))  # type: ignore[arg-type]
    assert by_offer["a-lp"] == by_offer["b-lp"] == by_offer["b-cd"] == 1 and by_offer["c-lp"] == 2
    assert _rows(writer, "SELECT release_id, position, catalog_number FROM release_catnos ORDER BY 1, 2") == [
        (1, 0, "FLD001"), (1, 1, "CAT-2"), (2, 0, "CAT-2")]  # in the spelling of the shop whose record it is
    assert _rows(writer, "SELECT id, catalog_number FROM releases ORDER BY id") == [(1, "FLD001"), (2, "CAT-2")]


# -- offers without an id of their own: named after page + format + condition (+ grades) -------

def _page_profile(tmp_path: Path) -> Profile:
    document = {"name": "a", "base_url": "http://a/", "start_urls": ["/"], "links": {"product": "a::attr(href)"},
                "structured": "schema.org", "price": {"default_currency": "EUR"}}
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_profile(str(path))


def _page(*offers: tuple[str, str, str | None, str | None, str]) -> RawRelease:
    """A product page whose offers have no id of their own: (format, condition, media, sleeve, price)."""
    raw = RawRelease(source="a", url="http://a/album", external_id="album-1", title="Common Assault EP",
                     artists=["Gareth Wild"], label="Fold Records", catalog_number="FLD001")
    raw.offers = [RawOffer(format=f, condition=c, media_grade=m, sleeve_grade=s, price=p, currency="EUR")
                  for f, c, m, s, p in offers]
    return raw


LP_NEW, CD_NEW = ("LP", "new", None, None, "12.00"), ("CD", "new", None, None, "8.00")
USED_A, USED_B = ("LP", "used", "VG+", "VG", "6.00"), ("LP", "used", "VG+", "VG", "6.50")  # equal grades
USED_NM = ("LP", "used", "NM", "VG+", "9.00")


def _offer_rows(writer: CatalogWriter) -> dict[tuple[object, ...], tuple[int, Decimal]]:
    """(format, condition, media, sleeve, nth of those equal by id) -> (row id, price)."""
    rows = _rows(writer, "SELECT id, format, condition, media_grade, sleeve_grade, price FROM offers ORDER BY id")
    found: dict[tuple[object, ...], tuple[int, Decimal]] = {}
    for row_id, *key, price in rows:
        nth = sum(1 for k in found if k[:4] == tuple(key))
        found[(*key, nth)] = (int(row_id), Decimal(str(price)))  # type: ignore[call-overload]
    return found


def test_reordering_a_pages_offers_or_adding_one_on_top_keeps_every_offer_and_its_history(
        writer: CatalogWriter, tmp_path: Path) -> None:
    profile = _page_profile(tmp_path)
    source = ensure_source(writer.engine, "a", "html", "http://a/")

    def crawl(*offers: tuple[str, str, str | None, str | None, str]) -> None:
        outcome = normalize_release(_page(*offers), profile)
        assert outcome.release is not None and not outcome.problems, outcome
        writer.write(source, [outcome.release])

    crawl(LP_NEW, CD_NEW, USED_A, USED_NM, USED_B)
    before = _offer_rows(writer)
    assert len(before) == 5
    # a cassette added above the others, the rest reordered (the two equal used copies keep their
    # order among themselves), and the new LP's price moves by 2.5 %
    crawl(("Cassette", "new", None, None, "7.00"), USED_NM, USED_A, CD_NEW, ("LP", "new", None, None, "12.30"), USED_B)
    after = _offer_rows(writer)
    assert len(after) == 6
    assert {key: row_id for key, (row_id, _) in after.items() if key in before} == {
        key: row_id for key, (row_id, _) in before.items()}  # the same rows: none renamed
    assert after[("LP", "new", None, None, 0)] == (before[("LP", "new", None, None, 0)][0], Decimal("12.30"))
    history = _rows(writer, "SELECT offer_id, old_price, new_price FROM offer_history")
    assert [(i, Decimal(str(o)), Decimal(str(n))) for i, o, n in history] == [
        (before[("LP", "new", None, None, 0)][0], Decimal("12.00"), Decimal("12.30"))]


def test_a_batch_with_one_offer_id_on_two_pages_counts_and_records_the_duplicate(writer: CatalogWriter) -> None:
    source = ensure_source(writer.engine, "a", "html", "http://a/")
    first, second = _album("12.00", "8.00"), _album("14.00", "9.00", title="Another EP", catno="FLD002",
                                                       barcodes=(None, None))
    second.url, second.external_id = "http://a/another", "a-another"
    for offer in second.offers:
        offer.url = second.url
    second.offers[1].external_id = "a-cd-2"  # the LP's id ("a-lp") is the first page's LP's too
    result = writer.write(source, [first, second])
    assert result.counts["offers_duplicate"] == 1
    assert [(kind, where) for kind, where, _ in result.problems] == [("duplicate_offer", "http://a/another")]
    assert "a-lp" in result.problems[0][2] and "http://a/album" in result.problems[0][2]
    assert _rows(writer, "SELECT external_id, url FROM offers ORDER BY id") == [
        ("a-lp", "http://a/album"), ("a-cd", "http://a/album"), ("a-cd-2", "http://a/another")]


def test_migration_0007_renames_positional_offer_ids_so_the_next_crawl_finds_the_same_rows(
        database_url: str, tmp_path: Path) -> None:
    """A database made by the previous main (0006), whose offers without a shop id are named by
    position: after the upgrade, a crawl of the page (reordered, one added on top) keeps every row."""
    engine = make_engine(database_url)
    upgrade(engine, "0006")
    SourceSpelling.__table__.create(engine)  # today's writer stands in for 0006's; it records spellings (0010)
    with engine.begin() as conn:  # and keys releases by their names (0012)
        conn.execute(text("ALTER TABLE releases ADD COLUMN names_key VARCHAR(32)"))
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    try:
        writer = CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=5.0))
        source = ensure_source(engine, "a", "html", "http://a/")
        old = [(f"album-1#{f}/{c}/{n}", (f, c, m, s, p)) for n, (f, c, m, s, p) in  # how 0006's main named them
               enumerate((LP_NEW, CD_NEW, USED_A, USED_NM, USED_B))]
        url = "http://a/album"
        writer.write(source, [Release("a", url, "album-1", "Common Assault EP", ["Gareth Wild"], "Fold Records",
                                      "FLD001", offers=[Offer(i, url, f, c, m, s, Decimal(p), "EUR")
                                                        for i, (f, c, m, s, p) in old])])
        before = _offer_rows(writer)
        SourceSpelling.__table__.drop(engine)  # (see below) the next upgrade creates it
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE releases DROP COLUMN names_key"))
        upgrade(engine)
        outcome = normalize_release(_page(("Cassette", "new", None, None, "7.00"), USED_NM, USED_A, CD_NEW,
                                          ("LP", "new", None, None, "12.30"), USED_B), _page_profile(tmp_path))
        assert outcome.release is not None
        writer.write(source, [outcome.release])
        after = _offer_rows(writer)
        assert len(after) == 6
        assert {key: row_id for key, (row_id, _) in after.items() if key in before} == {
            key: row_id for key, (row_id, _) in before.items()}
        assert [r[0] for r in _rows(writer, "SELECT offer_id FROM offer_history")] == [
            before[("LP", "new", None, None, 0)][0]]
    finally:
        queue.close()
        engine.dispose()
