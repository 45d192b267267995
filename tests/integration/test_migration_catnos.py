"""Migration 0005 takes a database at 0004 to catalogue numbers in a table of their own without
losing a row or a value, on SQLite and PostgreSQL: every release's stored number becomes its
numbers (split where it holds several), ``releases.catalog_number`` untouched."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import MetaData, Table, insert, text

from recordhound.db.engine import make_engine
from recordhound.db.migrate import current_revision, upgrade

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
ROWS = {
    "sources": [{"id": 1, "name": "shop", "kind": "html", "location": "http://shop/", "metadata": {}}],
    "labels": [{"id": 1, "name": "Fold Records", "name_key": "fold records"}],
    "releases": [{"id": 1, "natural_key": "cat:fold records|fld001", "title": "Common Assault EP", "label_id": 1,
                  "catalog_number": "FLD001", "year": 2016, "barcode": "0724384960650", "country": "UK"},
                 {"id": 2, "natural_key": "cat:fold records|fld002", "title": "Reissue", "label_id": 1,
                  "catalog_number": "FLD002 / CAT-2", "year": 2020, "barcode": None, "country": None},
                 {"id": 3, "natural_key": "rel:x|other|", "title": "Other", "label_id": None,
                  "catalog_number": None, "year": None, "barcode": None, "country": None}],
    "offers": [{"id": 1, "source_id": 1, "external_id": "A1", "url": "http://shop/a1", "release_id": 1,
                "price": Decimal("12.00"), "currency": "EUR", "in_stock": True, "first_seen": NOW, "last_seen": NOW,
                "availability": "in_stock", "format": "LP", "condition": "new", "media_grade": None,
                "sleeve_grade": None, "barcode": "0724384960650"},
               {"id": 2, "source_id": 1, "external_id": "A2", "url": "http://shop/a2", "release_id": 2,
                "price": Decimal("9.50"), "currency": "EUR", "in_stock": False, "first_seen": NOW, "last_seen": NOW,
                "availability": "sold_out", "format": "CD", "condition": "used", "media_grade": "VG+",
                "sleeve_grade": "VG", "barcode": None}],
}


def _dump(conn: object, table: str, columns: list[str]) -> list[tuple[object, ...]]:
    rows = conn.execute(text(f"SELECT {', '.join(columns)} FROM {table} ORDER BY 1, 2"))  # type: ignore[attr-defined]
    return [tuple(row) for row in rows]


def test_migration_0005_keeps_every_row_and_lists_each_releases_numbers(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine, "0004")
    assert current_revision(engine) == "0004"
    with engine.begin() as conn:
        for table, rows in ROWS.items():  # the tables as 0004 made them, reflected from the database
            conn.execute(insert(Table(table, MetaData(), autoload_with=conn)), rows)
    with engine.connect() as conn:
        before = {table: _dump(conn, table, list(rows[0])) for table, rows in ROWS.items()}
    upgrade(engine, "0005")
    assert current_revision(engine) == "0005"
    with engine.connect() as conn:
        after = {table: _dump(conn, table, list(rows[0])) for table, rows in ROWS.items()}
        numbers = _dump(conn, "release_catnos", ["release_id", "position", "catalog_number", "catno_key"])
    engine.dispose()
    assert after == before
    assert numbers == [(1, 0, "FLD001", "fld001"), (2, 0, "FLD002", "fld002"), (2, 1, "CAT-2", "cat2")]


def test_migration_0006_stores_each_barcode_in_its_ean_13_form(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine, "0005")
    spelled = {1: "724384960650", 2: "00724384960643", 3: "96385074"}  # UPC-A, GTIN-14, EAN-8
    rows = {"sources": ROWS["sources"], "labels": ROWS["labels"],
            "releases": [{**row, "barcode": spelled[row["id"]]} for row in ROWS["releases"]],
            "offers": [{**row, "barcode": spelled[row["id"] + 1]} for row in ROWS["offers"]]}
    with engine.begin() as conn:
        for table, values in rows.items():
            conn.execute(insert(Table(table, MetaData(), autoload_with=conn)), values)
    upgrade(engine, "0006")  # this migration's own step (later ones are tested on their own)
    assert current_revision(engine) == "0006"
    with engine.connect() as conn:
        releases = _dump(conn, "releases", ["id", "barcode", "title"])
        offers = _dump(conn, "offers", ["id", "barcode", "price"])
    engine.dispose()
    assert releases == [(1, "0724384960650", "Common Assault EP"), (2, "0724384960643", "Reissue"),
                        (3, "96385074", "Other")]
    assert [(i, code, Decimal(str(p))) for i, code, p in offers] == [
        (1, "0724384960643", Decimal("12.00")), (2, "96385074", Decimal("9.50"))]
