"""source_spellings: the spellings each source used, one row each, out of ``sources.metadata``

The metadata kept them as three JSON maps (``matched_artists``, ``matched_labels``,
``matched_styles``) that the writer read and rewrote whole whenever a batch brought a new name: a
cost that grew with the catalogue (38,600 spellings by the end of a 100,000-release shop). Now a
new name is one inserted row. Existing maps move into the table; downgrade moves them back.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 11:00:00
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

KINDS = ("artist", "label", "style")
MAPS = {f"matched_{kind}s" for kind in KINDS}
logger = logging.getLogger("alembic.runtime.migration")
sources = sa.table("sources", sa.column("id", sa.Integer()), sa.column("metadata", sa.JSON()))


def _metadata(conn: sa.Connection) -> list[tuple[int, dict[str, Any]]]:
    rows = conn.execute(sa.select(sources.c.id, sources.c.metadata)).all()
    found = []
    for source_id, meta in rows:
        if isinstance(meta, str):  # JSON text stored as a JSON string (written by hand)
            with contextlib.suppress(ValueError):
                meta = json.loads(meta)
        if isinstance(source_id, int):
            found.append((source_id, dict(meta) if isinstance(meta, dict) else {}))
    return found


def _fits(spelling: object, entity_id: object) -> bool:
    return (isinstance(spelling, str) and 0 < len(spelling) <= 300 and isinstance(entity_id, int)
            and not isinstance(entity_id, bool))


def upgrade() -> None:
    spellings = op.create_table(
        "source_spellings",
        sa.Column("source_id", sa.Integer(), sa.ForeignKey("sources.id"), primary_key=True),
        sa.Column("kind", sa.String(length=10), primary_key=True),
        sa.Column("spelling", sa.String(length=300), primary_key=True),
        sa.Column("entity_id", sa.Integer(), nullable=False),
    )
    conn = op.get_bind()
    for source_id, meta in _metadata(conn):
        if not any(f"matched_{kind}s" in meta for kind in KINDS):
            continue
        rows, kept = [], {key: value for key, value in meta.items() if key not in MAPS}
        for kind in KINDS:
            found = meta.get(f"matched_{kind}s")
            found = found if isinstance(found, dict) else {}
            rows += [{"source_id": source_id, "kind": kind, "spelling": spelling, "entity_id": entity_id}
                     for spelling, entity_id in found.items() if _fits(spelling, entity_id)]
            unfit = {spelling: entity_id for spelling, entity_id in found.items() if not _fits(spelling, entity_id)}
            if unfit:  # a hand-edited map: what the table cannot hold stays where it was, and is said
                logger.warning("source %d: %d matched_%ss entries do not fit source_spellings (a spelling over "
                               "300 characters or an id that is not a number); left in the metadata",
                               source_id, len(unfit), kind)
                kept[f"matched_{kind}s"] = unfit
        if rows:
            conn.execute(sa.insert(spellings), rows)
        conn.execute(sa.update(sources).where(sources.c.id == source_id).values(metadata=kept))


def downgrade() -> None:
    conn = op.get_bind()
    spellings = sa.table("source_spellings", sa.column("source_id"), sa.column("kind"),
                         sa.column("spelling"), sa.column("entity_id"))
    maps: dict[int, dict[str, dict[str, int]]] = {}
    for row in conn.execute(sa.select(spellings)).all():
        maps.setdefault(row.source_id, {}).setdefault(f"matched_{row.kind}s", {})[row.spelling] = row.entity_id
    for source_id, meta in _metadata(conn):
        if source_id in maps:
            restored = {key: {**(meta.get(key) or {}), **found} for key, found in maps[source_id].items()}
            conn.execute(sa.update(sources).where(sources.c.id == source_id).values(metadata={**meta, **restored}))
    op.drop_table("source_spellings")
