"""releases: barcode and country; offers: one per format and condition (availability, grades, barcode)

Existing offers keep every value; their availability is derived from ``in_stock`` (True: in_stock,
False: sold_out), format and condition stay unknown (NULL) until the page is crawled again.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 12:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("releases") as batch:
        batch.add_column(sa.Column("barcode", sa.String(length=14), nullable=True))
        batch.add_column(sa.Column("country", sa.String(length=100), nullable=True))
        batch.create_index("ix_releases_barcode", ["barcode"], unique=False)
    with op.batch_alter_table("offers") as batch:
        batch.add_column(sa.Column("availability", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("format", sa.String(length=40), nullable=True))
        batch.add_column(sa.Column("condition", sa.String(length=10), nullable=True))
        batch.add_column(sa.Column("media_grade", sa.String(length=10), nullable=True))
        batch.add_column(sa.Column("sleeve_grade", sa.String(length=10), nullable=True))
        batch.add_column(sa.Column("barcode", sa.String(length=14), nullable=True))
        batch.create_index("ix_offers_barcode", ["barcode"], unique=False)
    offers = sa.table("offers", sa.column("in_stock", sa.Boolean()), sa.column("availability", sa.String()))
    op.execute(offers.update().where(offers.c.in_stock.is_(True)).values(availability="in_stock"))
    op.execute(offers.update().where(offers.c.in_stock.is_(False)).values(availability="sold_out"))


def downgrade() -> None:
    with op.batch_alter_table("offers") as batch:
        batch.drop_index("ix_offers_barcode")
        for column in ("barcode", "sleeve_grade", "media_grade", "condition", "format", "availability"):
            batch.drop_column(column)
    with op.batch_alter_table("releases") as batch:
        batch.drop_index("ix_releases_barcode")
        batch.drop_column("country")
        batch.drop_column("barcode")
