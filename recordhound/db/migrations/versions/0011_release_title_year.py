"""release_title_year: the title lookup's index covers the year too

The last step of matching looks a release up by title and year. With ``ix_releases_title`` alone,
every stored release of a common title was read to find the one of that year: a shop whose titles
repeat (a 1,000,000-release demo shop, "Greatest Hits" in a real one) read more rows per batch the
more it had stored, and its writer fell behind the crawl after 600,000 releases. One index on
(title, year) serves both the title-and-year and the title-only lookups.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 12:55:00
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_releases_title_year", "releases", ["title", "year"], unique=False)
    op.drop_index("ix_releases_title", table_name="releases")


def downgrade() -> None:
    op.create_index("ix_releases_title", "releases", ["title"], unique=False)
    op.drop_index("ix_releases_title_year", table_name="releases")
