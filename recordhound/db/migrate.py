"""`recordhound db upgrade`: create or migrate the product schema with Alembic."""

from __future__ import annotations

import functools
import logging
import tempfile
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from recordhound.db.engine import lock_for_writing, make_engine

logger = logging.getLogger(__name__)


def alembic_config() -> Config:
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
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision``; several nodes may call this at once."""
    if revision == "head" and current_revision(engine) == head_revision():
        return
    config = alembic_config()
    with engine.begin() as conn:
        lock_for_writing(conn)
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    logger.info("Product database schema is at revision %s", current_revision(engine))


def open_database(url: str) -> Engine:
    """An engine on the product database, its schema migrated to the current revision."""
    engine = make_engine(url)
    upgrade(engine)
    return engine
