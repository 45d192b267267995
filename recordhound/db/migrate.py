"""`recordhound db upgrade`: create or migrate the product schema with Alembic."""

from __future__ import annotations

import logging
from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from recordhound.db.engine import lock_for_writing

logger = logging.getLogger(__name__)


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.files("recordhound.db") / "migrations"))
    return config


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
