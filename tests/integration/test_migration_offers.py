"""Migration 0004 takes a database made by the previous schema (0003, today's main) to offers per
format and condition without losing a row or a value, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import MetaData, Table, insert, text

from recordhound.db.engine import make_engine
from recordhound.db.migrate import current_revision, head_revision, upgrade

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
ROWS = {
    "sources": [{"id": 1, "name": "shop", "kind": "html", "location": "http://shop/", "metadata": {}}],
    "labels": [{"id": 1, "name": "Fold Records", "name_key": "fold records"}],
    "artists": [{"id": 1, "name": "Gareth Wild", "name_key": "gareth wild"}],
    "releases": [{"id": 1, "natural_key": "cat:fold records|fld001", "title": "Common Assault EP",
                  "label_id": 1, "catalog_number": "FLD001", "year": 2016},
                 {"id": 2, "natural_key": "rel:gareth wild|other|", "title": "Other", "label_id": None,
                  "catalog_number": None, "year": None}],
    "release_artists": [{"release_id": 1, "artist_id": 1, "position": 0}],
    "offers": [{"id": 1, "source_id": 1, "external_id": "A1", "url": "http://shop/a1", "release_id": 1,
                "price": Decimal("12.00"), "currency": "EUR", "in_stock": True, "first_seen": NOW, "last_seen": NOW},
               {"id": 2, "source_id": 1, "external_id": "A2", "url": "http://shop/a2", "release_id": 2,
                "price": None, "currency": None, "in_stock": False, "first_seen": NOW, "last_seen": NOW},
               {"id": 3, "source_id": 1, "external_id": "A3", "url": "http://shop/a3", "release_id": 2,
                "price": Decimal("6.50"), "currency": "GBP", "in_stock": None, "first_seen": NOW, "last_seen": NOW}],
    "offer_history": [{"id": 1, "offer_id": 1, "old_price": Decimal("11.00"), "new_price": Decimal("12.00"),
                       "old_currency": "EUR", "new_currency": "EUR", "changed_at": NOW}],
}


def _dump(conn: object, table: str, columns: list[str]) -> list[tuple[object, ...]]:
    rows = conn.execute(text(f"SELECT {', '.join(columns)} FROM {table} ORDER BY 1, 2"))  # type: ignore[attr-defined]
    return [tuple(row) for row in rows]


def test_migration_keeps_every_row_and_value(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine, "0003")
    assert current_revision(engine) == "0003"
    with engine.begin() as conn:
        for table, rows in ROWS.items():  # the tables as 0003 made them, reflected from the database
            conn.execute(insert(Table(table, MetaData(), autoload_with=conn)), rows)
    with engine.connect() as conn:
        before = {table: _dump(conn, table, list(rows[0])) for table, rows in ROWS.items()}
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        after = {table: _dump(conn, table, list(rows[0])) for table, rows in ROWS.items()}
        availability = _dump(conn, "offers", ["external_id", "availability", "format", "condition", "barcode"])
        releases = _dump(conn, "releases", ["id", "barcode", "country"])
    engine.dispose()
    assert after == before
    assert {row[0]: row[1] for row in availability} == {"A1": "in_stock", "A2": "sold_out", "A3": None}
    assert all(row[2:] == (None, None, None) for row in availability)
    assert releases == [(1, None, None), (2, None, None)]
