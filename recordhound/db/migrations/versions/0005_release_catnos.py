"""release_catnos: every catalogue number of a release (releases.catalog_number keeps the first)

Existing releases get their stored ``catalog_number`` as their numbers: split where it holds
several ("FLD001 / CAT-2" is two), in order; ``releases.catalog_number`` itself is not touched.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 14:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from recordhound.text import catalog_number_key, split_catalog_numbers

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None
BATCH = 1000


def upgrade() -> None:
    op.create_table(
        "release_catnos",
        sa.Column("release_id", sa.Integer(), sa.ForeignKey("releases.id"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("catalog_number", sa.String(length=100), nullable=False),
        sa.Column("catno_key", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("release_id", "position"),
    )
    op.create_index("ix_release_catnos_catno_key", "release_catnos", ["catno_key"], unique=False)
    releases = sa.table("releases", sa.column("id", sa.Integer()), sa.column("catalog_number", sa.String()))
    catnos = sa.table("release_catnos", sa.column("release_id", sa.Integer()), sa.column("position", sa.Integer()),
                      sa.column("catalog_number", sa.String()), sa.column("catno_key", sa.String()))
    conn = op.get_bind()
    rows = conn.execute(sa.select(releases.c.id, releases.c.catalog_number)
                        .where(releases.c.catalog_number.is_not(None)).order_by(releases.c.id)).all()
    values = [{"release_id": rid, "position": pos, "catalog_number": number,
               "catno_key": catalog_number_key(number)[:100]}
              for rid, text in rows for pos, number in enumerate(split_catalog_numbers(str(text)))]
    for start in range(0, len(values), BATCH):
        conn.execute(sa.insert(catnos), values[start:start + BATCH])


def downgrade() -> None:
    op.drop_index("ix_release_catnos_catno_key", table_name="release_catnos")
    op.drop_table("release_catnos")
