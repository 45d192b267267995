"""A catalog writer on a migrated SQLite product DB and an embedded review queue in ``tmp_path``, and
the rows a query reads back: for tests of what extraction's items become once written."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue


def trusted_writer(tmp_path: Path) -> CatalogWriter:
    """New artists, labels and styles are created; no price change is held (threshold 100 %)."""
    engine = make_engine(f"sqlite:///{tmp_path / 'p.sqlite3'}")
    upgrade(engine)
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    return CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100))


def rows(writer: CatalogWriter, query: str) -> list[tuple[Any, ...]]:
    with writer.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(query)).all()]
