"""gtin13: stored barcodes in one form, so a UPC-A and its EAN-13 name one release

A UPC-A (12 digits) is the EAN-13 with a leading zero, and a GTIN-14 with a leading zero is the
EAN-13 without it: shops print either. Barcodes are stored as ``music.barcode`` now writes them
(13 digits where the code has an EAN-13 form; EAN-8 and other GTIN-14 stay as they are).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 16:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    for table in ("releases", "offers"):
        rows = sa.table(table, sa.column("id", sa.Integer()), sa.column("barcode", sa.String()))
        conn.execute(sa.update(rows).where(sa.func.length(rows.c.barcode) == 12)
                     .values(barcode=sa.literal("0") + rows.c.barcode))
        conn.execute(sa.update(rows).where(sa.func.length(rows.c.barcode) == 14,
                                           sa.func.substr(rows.c.barcode, 1, 1) == "0")
                     .values(barcode=sa.func.substr(rows.c.barcode, 2, 13)))


def downgrade() -> None:
    """The 12-digit spelling of a code stored as 13 digits is not known any more: left as it is."""
