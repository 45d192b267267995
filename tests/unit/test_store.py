"""The batch writer on a real SQLite file: idempotent upserts, synonyms once, history on change."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import text

from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.sources import ensure_source
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue
from recordhound.items import Release


@pytest.fixture
def writer(tmp_path: Path) -> CatalogWriter:
    engine = make_engine(f"sqlite:///{tmp_path / 'p.sqlite3'}")
    upgrade(engine)
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    return CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100))


def _item(sku: str, artists: list[str], price: str = "9.99", catno: str = "X-1") -> Release:
    return Release("demo", f"http://shop/{sku}", sku, "Title", artists, "Label", catno, 1999,
                   ["Hip Hop"], Decimal(price), "EUR", True)


def _rows(writer: CatalogWriter, sql: str) -> list:  # type: ignore[type-arg]
    with writer.engine.connect() as conn:
        return list(conn.execute(text(sql)).all())


def test_variant_spellings_make_one_artist_with_synonyms(writer: CatalogWriter) -> None:
    source = ensure_source(writer.engine, "demo", "html", "http://shop/")
    writer.write(source, [_item("a", ["Beatles, The"]), _item("b", ["the beatles"], catno="X-2"),
                          _item("c", ["The Beatles"], catno="X-3")])
    writer.write(source, [_item("d", ["the beatles"], catno="X-4"), _item("e", ["Beatles, The"], catno="X-5")])
    assert _rows(writer, "SELECT name FROM artists") == [("The Beatles",)]
    spellings = sorted(r[0] for r in _rows(writer, "SELECT spelling FROM artist_synonyms"))
    assert spellings == ["Beatles, The", "The Beatles", "the beatles"]


def test_same_batch_twice_changes_nothing_and_price_change_writes_history(writer: CatalogWriter) -> None:
    source = ensure_source(writer.engine, "demo", "html", "http://shop/")
    batch = [_item("a", ["A"]), _item("b", ["B"], catno="X-2"), _item("a", ["A"])]  # repeat in batch
    first = writer.write(source, batch)
    assert first.counts["offers_new"] == 2
    second = writer.write(source, batch)
    assert second.counts["offers_unchanged"] == 2 and second.counts["offers_new"] == 0
    changed = writer.write(source, [_item("a", ["A"], price="10.49")])
    assert changed.counts["price_changes"] == 1
    history = _rows(writer, "SELECT old_price, new_price FROM offer_history")
    assert [(Decimal(str(o)), Decimal(str(n))) for o, n in history] == [(Decimal("9.99"), Decimal("10.49"))]
    assert _rows(writer, "SELECT max(id), count(*) FROM offers") == [(2, 2)]


def test_catalog_number_spelling_does_not_split_a_release(writer: CatalogWriter) -> None:
    source = ensure_source(writer.engine, "demo", "html", "http://shop/")
    writer.write(source, [_item("new", ["A"], catno="ABC-00012"), _item("used", ["A"], catno="ABC 00012")])
    assert _rows(writer, "SELECT count(*) FROM releases") == [(1,)]
    assert _rows(writer, "SELECT count(DISTINCT release_id), count(*) FROM offers") == [(1, 2)]


def _matched(writer: CatalogWriter, source: int) -> dict[str, int]:
    return dict(_rows(writer, f"SELECT spelling, entity_id FROM source_spellings WHERE source_id = {source} "
                              "AND kind = 'artist'"))


def test_the_writer_remembers_a_bounded_number_of_matches(tmp_path: Path) -> None:
    """Every spelling a crawl matched is in source_spellings; the writer keeps only the recent
    ones in memory (it kept them all: 38,600 by the end of a crawl of 100,000 releases), and a batch that
    names a forgotten one finds it there and writes nothing again."""
    engine = make_engine(f"sqlite:///{tmp_path / 'p.sqlite3'}")
    upgrade(engine)
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    writer = CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100),
                           matches_kept=50)
    source = ensure_source(engine, "demo", "html", "http://shop/")
    for batch in range(6):
        writer.write(source, [_item(f"s{batch}-{n}", [f"Artist {batch}-{n}"], catno=f"X-{batch}-{n}") for n in range(20)])
    assert len(writer.recorded) <= 50
    matched = _matched(writer, source)
    assert len(matched) == 120
    again = writer.write(source, [_item("s0-0", ["Artist 0-0"], catno="X-0-0")])
    assert again.counts["offers_unchanged"] == 1 and again.counts["artists_new"] == 0
    assert _matched(writer, source) == matched
