"""The spellings a source used (``source_spellings``, migration 0010): moved out of the source's
metadata, where the writer rewrote every one of them whenever a batch brought a new name."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from alembic import command
from sqlalchemy import Engine, text

from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.db.migrate import alembic_config, upgrade
from recordhound.db.sources import spellings
from recordhound.items import Release
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue

OLD_META = {"status": "finished", "counts": {"stored": 3}, "auto_approved": {"artists": 2},
            "matched_artists": {"Beatles, The": 1, "the beatles": 1, "Björk": 2},
            "matched_labels": {"Warp Records": 1}, "matched_styles": {}}
UNFIT = {"x" * 301: 1, "Broken": "one"}  # edited by hand: the table cannot hold these


def _meta(engine: Engine, source_id: int = 1) -> dict[str, Any]:
    with engine.connect() as conn:
        value = conn.execute(text("SELECT metadata FROM sources WHERE id = :id"), {"id": source_id}).scalar_one()
    return value if isinstance(value, dict) else json.loads(value)


def _downgrade(engine: Engine, revision: str) -> None:
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)


def test_migration_0010_moves_the_matched_maps_into_rows_and_back(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0009")
        with engine.begin() as conn:
            for table, name in (("artists", "The Beatles"), ("artists", "Bjork"), ("labels", "Warp")):
                conn.execute(text(f"INSERT INTO {table} (name, name_key) VALUES (:n, :k)"), {"n": name, "k": name.lower()})
            old = {**OLD_META, "matched_styles": UNFIT}
            conn.execute(text("INSERT INTO sources (id, name, kind, location, metadata) VALUES "
                              "(1, 'demo', 'html', 'http://shop/', :meta)"), {"meta": json.dumps(old)})
            conn.execute(text("INSERT INTO sources (id, name, kind, location, metadata) VALUES "  # a JSON string
                              "(2, 'feed', 'csv', 'feed.csv', :meta)"),
                         {"meta": json.dumps(json.dumps({"matched_labels": {"Warp": 1}}))})
        upgrade(engine)
        with engine.connect() as conn:
            assert spellings(conn, 1, "artist") == {"Beatles, The": 1, "the beatles": 1, "Björk": 2}
            assert spellings(conn, 1, "label") == {"Warp Records": 1}
            assert spellings(conn, 1, "style") == {}
            assert spellings(conn, 2, "label") == {"Warp": 1}
        assert _meta(engine) == {"status": "finished", "counts": {"stored": 3}, "auto_approved": {"artists": 2},
                                 "matched_styles": UNFIT}
        assert _meta(engine, 2) == {}
        _downgrade(engine, "0009")
        assert _meta(engine) == old
        assert _meta(engine, 2) == {"matched_labels": {"Warp": 1}}
    finally:
        engine.dispose()


def test_a_new_spelling_adds_a_row_and_a_merge_repoints_it(database_url: str, tmp_path: Path) -> None:
    """After the upgrade the writer records only what the rows lack: a batch of known spellings
    writes none, a new one is one row, and a row that names another entity than the batch
    matched (an admin's merge since) is repointed."""
    engine = make_engine(database_url)
    upgrade(engine)
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    try:
        writer = CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100))
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO sources (id, name, kind, location, metadata) VALUES "
                              "(1, 'demo', 'html', 'http://shop/', '{}')"))

        def item(sku: str, artist: str) -> Release:
            return Release("demo", f"http://shop/{sku}", sku, f"Title {sku}", [artist])

        writer.write(1, [item("a", "Aphex Twin"), item("b", "Autechre")])
        with engine.connect() as conn:
            first = spellings(conn, 1, "artist")
        assert sorted(first) == ["Aphex Twin", "Autechre"]
        writer.write(1, [item("c", "AFX"), item("a", "Aphex Twin")])
        with engine.connect() as conn:
            assert spellings(conn, 1, "artist") == {**first, "AFX": 3}
            conn.execute(text("UPDATE source_spellings SET entity_id = 99 WHERE spelling = 'Autechre'"))
            conn.commit()
        fresh = CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100))
        fresh.write(1, [item("b", "Autechre")])
        with engine.connect() as conn:
            assert spellings(conn, 1, "artist")["Autechre"] == first["Autechre"]
    finally:
        queue.close()
        engine.dispose()
