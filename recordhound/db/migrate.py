"""`recordhound db upgrade`: create or migrate the product schema with Alembic.

A database already at the packaged head is told apart without Alembic: the revisions are named
after their files (``versions/NNNN_*.py``, ``revision = "NNNN"``, one line of history; a test holds
this), so the head is the highest file name and the stored revision one row of ``alembic_version``.
Every crawl's store opens this way, so a crawl of an up-to-date database neither imports Alembic nor
loads the migration scripts (about 0.2 s of a node's start-up: docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import logging
import tempfile
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from recordhound.db.engine import lock_for_writing, make_engine
from recordhound.db.revision import packaged_head, unusable_schema
from recordhound.exceptions import RecordhoundError

if TYPE_CHECKING:
    from alembic.config import Config

logger = logging.getLogger(__name__)


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", migrations_folder())
    return config


@functools.cache
def migrations_folder() -> str:
    """Alembic needs a real folder; inside a zipped egg (scrapyd) the scripts are copied out once."""
    packaged = resources.files("recordhound.db") / "migrations"
    if isinstance(packaged, Path):
        return str(packaged)
    target = Path(tempfile.mkdtemp(prefix="recordhound-migrations-"))
    _copy_tree(packaged, target)
    return str(target)


def _copy_tree(source: Traversable, target: Path) -> None:
    target.mkdir(exist_ok=True)
    for child in source.iterdir():
        if child.is_dir():
            if child.name != "__pycache__":
                _copy_tree(child, target / child.name)
        else:
            (target / child.name).write_bytes(child.read_bytes())


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def stored_revision(engine: Engine) -> str | None:
    """The schema's revision read without Alembic; None when there is none to read (no schema yet)."""
    with engine.connect() as conn:
        try:
            rows: list[str] = list(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
        except DBAPIError:
            return None  # no table: Alembic creates the schema (and says why, if it cannot)
    return rows[0] if len(rows) == 1 else None


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision``; several nodes may call this at once. A schema newer than this
    code's (a newer recordhound migrated it), or another application's, is one :class:`RecordhoundError`
    saying so, not Alembic's "Can't locate revision"."""
    stored = stored_revision(engine)
    if revision == "head" and stored == packaged_head():
        return
    if (unusable := unusable_schema(engine.url.render_as_string(hide_password=True), stored)) is not None:
        raise RecordhoundError(unusable)
    from alembic import command

    config = alembic_config()
    with engine.begin() as conn:
        lock_for_writing(conn)
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    logger.info("Product database schema is at revision %s", current_revision(engine))


def open_database(url: str) -> Engine:
    """An engine on the product database, its schema migrated to the current revision. One that could not be
    migrated is disposed of at once (a daemon tries again while it waits: no session held per try)."""
    engine = make_engine(url)
    try:
        upgrade(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine
