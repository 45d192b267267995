"""admin users: a session epoch (logout and password changes end every session of the user)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 22:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("admin_users") as batch:
        batch.add_column(sa.Column("session_epoch", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("admin_users") as batch:
        batch.drop_column("session_epoch")
