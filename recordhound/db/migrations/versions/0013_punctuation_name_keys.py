"""punctuation_name_keys: a name of punctuation only is its own matching key

Folding a name for matching dropped everything but letters and digits, so "!!!", "???" and "…"
all had the empty key: the first such artist (label, style) stored took every later one as a
synonym, and two releases of one artist and year titled "!!!" and "???" were one record. Such a
name is now keyed by itself (see ``recordhound.text.name_key``). Here the one entity of each kind
that holds the empty key is keyed by its name, and the releases whose title had the empty key get
their ``names_key`` again. Spellings already taken as synonyms of that entity stay its synonyms (an
admin can tell them apart; nothing here can).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 04:20:00
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

from recordhound.db.releases import names_key
from recordhound.text import fold, name_key

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

CHUNK = 5000
ENTITY_TABLES = ("artists", "labels", "styles")
logger = logging.getLogger("alembic.runtime.migration")
releases = sa.table("releases", sa.column("id", sa.Integer()), sa.column("title", sa.String()),
                    sa.column("year", sa.Integer()), sa.column("names_key", sa.String()))
release_artists = sa.table("release_artists", sa.column("release_id", sa.Integer()),
                           sa.column("artist_id", sa.Integer()), sa.column("position", sa.Integer()))


def upgrade() -> None:
    conn = op.get_bind()
    for name in ENTITY_TABLES:
        table = sa.table(name, sa.column("name", sa.String()), sa.column("name_key", sa.String()))
        for row in conn.execute(sa.select(table.c.name).where(table.c.name_key == "")).all():
            conn.execute(table.update().where(table.c.name_key == "").values(name_key=name_key(row.name)))
            logger.info("%s: %r keyed by its name", name, row.name)
    _rekey_releases(conn)


def _rekey_releases(conn: sa.Connection) -> None:
    last = keyed = 0
    while True:
        rows = conn.execute(sa.select(releases.c.id, releases.c.title, releases.c.year)
                            .where(releases.c.id > last).order_by(releases.c.id).limit(CHUNK)).all()
        if not rows:
            break
        last = rows[-1].id
        bare = [r for r in rows if not fold(r.title)]  # (the title's key folding left empty)
        if bare:
            artists: dict[int, list[int]] = {}
            for link in conn.execute(sa.select(release_artists.c.release_id, release_artists.c.artist_id)
                                     .where(release_artists.c.release_id.in_([r.id for r in bare]))
                                     .order_by(release_artists.c.release_id, release_artists.c.position)):
                artists.setdefault(link.release_id, []).append(link.artist_id)
            conn.execute(releases.update().where(releases.c.id == sa.bindparam("rid"))
                         .values(names_key=sa.bindparam("key")),
                         [{"rid": r.id, "key": names_key(r.title, r.year, tuple(artists.get(r.id, [])))} for r in bare])
            keyed += len(bare)
    logger.info("names_key: %d releases titled without letters or digits keyed again", keyed)


def downgrade() -> None:
    """Nothing to undo: the keys stay as they are (the code before this revision matches them by
    synonym, and gives a new name of that kind the empty key again)."""
