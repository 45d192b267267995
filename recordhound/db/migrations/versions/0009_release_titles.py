"""release_titles: an index on releases.title, for the last step of matching (artists + title + year)

Every item that no barcode or catalogue number matched looks its release up by title: without an
index that read every release once per batch.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 17:40:00
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_releases_title", "releases", ["title"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_releases_title", table_name="releases")
