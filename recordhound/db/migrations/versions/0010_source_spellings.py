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

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

KINDS = ("artist", "label", "style")
sources = sa.table("sources", sa.column("id", sa.Integer()), sa.column("metadata", sa.JSON()))


def _metadata(conn: sa.Connection) -> list[tuple[int, dict[str, Any]]]:
    rows = conn.execute(sa.select(sources.c.id, sources.c.metadata)).all()
    return [(source_id, dict(meta) if isinstance(meta, dict) else {}) for source_id, meta in rows if isinstance(source_id, int)]


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
        rows = [{"source_id": source_id, "kind": kind, "spelling": spelling, "entity_id": int(entity_id)}
                for kind in KINDS for spelling, entity_id in (meta.get(f"matched_{kind}s") or {}).items()]
        if rows:
            conn.execute(sa.insert(spellings), rows)
        kept = {key: value for key, value in meta.items() if key not in {f"matched_{kind}s" for kind in KINDS}}
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
            conn.execute(sa.update(sources).where(sources.c.id == source_id).values(metadata={**meta, **maps[source_id]}))
    op.drop_table("source_spellings")
