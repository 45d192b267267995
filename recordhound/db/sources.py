"""The ``sources`` row of a shop or file, and its JSON metadata (status, progress, counts)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, select, update

from recordhound.db.engine import lock_for_writing
from recordhound.db.ids import insert_with_ids
from recordhound.db.models import Source


def ensure_source(engine: Engine, name: str, kind: str, location: str) -> int:
    """The source's row id, created on first use (never re-inserted)."""
    with engine.begin() as conn:
        lock_for_writing(conn)
        found = conn.execute(select(Source.id).where(Source.name == name)).scalar()
        if found is not None:
            if conn.execute(select(Source.location).where(Source.id == found)).scalar() != location:
                conn.execute(update(Source).where(Source.id == found).values(location=location))
            return int(found)
        meta: dict[str, Any] = {"status": "new", "parsed_at": None, "error_message": None, "counts": {}}
        return insert_with_ids(conn, Source, [{"name": name, "kind": kind, "location": location, "meta": meta}])[0]


def update_source_meta(engine: Engine, source_id: int, changes: dict[str, Any]) -> dict[str, Any]:
    """Merge ``changes`` into the source's JSON metadata; returns the new metadata."""
    with engine.begin() as conn:
        lock_for_writing(conn)
        meta: dict[str, Any] = dict(conn.execute(select(Source.meta).where(Source.id == source_id)).scalar_one() or {})
        meta.update(changes)
        conn.execute(update(Source).where(Source.id == source_id).values(meta=meta))
        return meta


def now_iso() -> str:
    """The timestamps of a source's metadata (``parsed_at``, ``started_at``, errors' ``at``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
