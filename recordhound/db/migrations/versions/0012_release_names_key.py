"""release_names_key: the last step of matching finds exactly the releases it looks for

A new release with no barcode or catalogue number known to the store is matched by title, year and
ordered artists. Through ``ix_releases_title_year`` every stored release of the same title and
year was read, with its artists, batch after batch: a shop whose titles repeat read more the more
it had stored (100,000 releases of 400 titles: 80 → 362 ms per batch of 100). ``names_key`` is a
digest of the three (the title by its matching key, as the lookup compared it), with its own
index: one index probe per item, whatever the catalogue's size.
Existing releases get their key here; the writer sets it on every insert and update.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 14:45:00
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

from recordhound.db.releases import names_key

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

CHUNK = 5000
logger = logging.getLogger("alembic.runtime.migration")
releases = sa.table("releases", sa.column("id", sa.Integer()), sa.column("title", sa.String()),
                    sa.column("year", sa.Integer()), sa.column("names_key", sa.String()))
release_artists = sa.table("release_artists", sa.column("release_id", sa.Integer()),
                           sa.column("artist_id", sa.Integer()), sa.column("position", sa.Integer()))


def upgrade() -> None:
    op.add_column("releases", sa.Column("names_key", sa.String(length=32), nullable=True))
    conn = op.get_bind()
    last = done = 0
    while True:
        rows = conn.execute(sa.select(releases.c.id, releases.c.title, releases.c.year)
                            .where(releases.c.id > last).order_by(releases.c.id).limit(CHUNK)).all()
        if not rows:
            break
        last = rows[-1].id
        artists: dict[int, list[int]] = {}
        for link in conn.execute(sa.select(release_artists.c.release_id, release_artists.c.artist_id)
                                 .where(release_artists.c.release_id.in_([r.id for r in rows]))
                                 .order_by(release_artists.c.release_id, release_artists.c.position)):
            artists.setdefault(link.release_id, []).append(link.artist_id)
        conn.execute(releases.update().where(releases.c.id == sa.bindparam("rid"))
                     .values(names_key=sa.bindparam("key")),
                     [{"rid": r.id, "key": names_key(r.title, r.year, tuple(artists.get(r.id, [])))} for r in rows])
        done += len(rows)
        logger.info("names_key: %d releases keyed", done)
    op.create_index("ix_releases_names_key", "releases", ["names_key"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_releases_names_key", table_name="releases")
    if op.get_bind().dialect.name == "sqlite":  # SQLite >= 3.35 drops it in place (a batch rebuild
        op.execute("ALTER TABLE releases DROP COLUMN names_key")  # would drop a table others point at)
    else:
        op.drop_column("releases", "names_key")
