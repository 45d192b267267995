"""The store keeps PostgreSQL's planner statistics current, and its lookups use their indexes.

A fresh database with autovacuum off on every product table (``autovacuum_enabled = false``: the
case of a server whose autovacuum is off or behind, and of any database filled in minutes) gets
30,000 releases and offers through the writer. Then: ``pg_stat_user_tables`` shows the writer's own
ANALYZE (without it: never analyzed, and the barcode lookup reads every release). The releases and
their catalogue numbers are then grown tenfold in SQL (at 30,000 rows a sequential read of 200 keys
is honestly cheaper), and every lookup the writer runs for one more batch (captured as sent, with
its parameters) is explained: none may read a big table row by row to find its keys (offers by
source and external id, releases by key, barcode and catalogue number, artists, labels and styles
by name).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event, text

from recordhound.catalog.writer import PRODUCT_TABLES, CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.db.sources import ensure_source
from recordhound.items import Release
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue
from tests.services import PostgresDatabase

ITEMS = 30_000
BATCH = 500
LOOKED_UP = ("offers", "releases", "release_catnos", "release_artists", "artists", "labels", "styles")


def _ean13(n: int) -> str:
    digits = f"400{n:09d}"
    check = (10 - sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10) % 10
    return digits + str(check)


def _item(n: int) -> Release:
    return Release("big", f"http://big/p/{n}", f"sku-{n}", f"Title {n}", [f"Artist {n % 12_000}"],
                   f"Label {n % 6_000}", f"CAT-{n}", 1990 + n % 30, [f"Style {n % 3_000}"], Decimal("9.99"), "EUR",
                   True, barcode=_ean13(n))


@pytest.fixture
def engine() -> Iterator[Engine]:
    with PostgresDatabase() as database:
        made = make_engine(database.url)
        upgrade(made)
        with made.begin() as conn:
            for table in PRODUCT_TABLES:
                conn.execute(text(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)'))
        yield made
        made.dispose()


def _lookups(engine: Engine, work: Any) -> list[tuple[str, Any]]:
    """The SELECTs ``work()`` sends, with their parameters."""
    sent: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT") and any(t in statement for t in LOOKED_UP):
            sent.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        work()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return sent


GROW = ("INSERT INTO releases (id, natural_key, title, label_id, catalog_number, year, barcode, country, names_key) "
        "SELECT id + 100000 * g, natural_key || '#' || g, title, label_id, catalog_number, year, NULL, country, "
        "names_key "
        "FROM releases, generate_series(1, 9) AS g",
        "INSERT INTO release_catnos (release_id, position, catalog_number, catno_key) "
        "SELECT id, 0, 'X-' || id, 'x' || id FROM releases WHERE id > 100000")


def _seq_scans(plan: dict[str, Any], big: set[str]) -> list[str]:
    """Big tables read row by row to find the looked-up keys (``= ANY (...)``: an IN list); a seq scan
    feeding a hash join is the planner's join choice at this size, not a lookup."""
    found = ([f'{plan["Relation Name"]}: {plan["Filter"]}'[:160]] if plan["Node Type"] == "Seq Scan"
             and plan.get("Relation Name") in big and "ANY (" in plan.get("Filter", "") else [])
    return found + [name for child in plan.get("Plans", []) for name in _seq_scans(child, big)]


def test_store_analyzes_what_it_wrote_and_its_lookups_use_indexes(engine: Engine, tmp_path: Path) -> None:
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    writer = CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100))
    source = ensure_source(engine, "big", "html", "http://big/")
    for start in range(0, ITEMS, BATCH):
        writer.write(source, [_item(n) for n in range(start, start + BATCH)])
    with engine.connect() as conn:
        analyzed = dict(conn.execute(text(
            "SELECT relname, last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname IN "
            "('offers', 'releases', 'artists', 'labels', 'styles', 'release_catnos')")).all())
        sizes = {t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one() for t in LOOKED_UP}
    assert analyzed == dict.fromkeys(analyzed, True) and len(analyzed) == 6, analyzed
    big = {t for t, rows in sizes.items() if rows > 1000}
    assert big == set(LOOKED_UP), sizes
    with engine.begin() as conn:
        for statement in GROW:
            conn.execute(text(statement))
    writer.write(source, [_item(n) for n in range(ITEMS, ITEMS + 10)])  # the batch after the growth: ANALYZE
    again = [_item(n) for n in range(ITEMS - 100, ITEMS + 100)]  # known and new: every lookup runs
    sent = _lookups(engine, lambda: writer.write(source, again))
    scans: dict[str, list[str]] = {}
    with engine.connect() as conn:
        for statement, parameters in sent:
            raw = conn.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {statement}", parameters).scalar_one()
            plan = (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]
            if found := _seq_scans(plan, big):
                scans[" ".join(statement.split(" WHERE ")[-1].split())[:100]] = found
    queue.close()
    assert len(sent) >= 5 and not scans, "\n".join(f"{where} -> {found}" for where, found in scans.items())
