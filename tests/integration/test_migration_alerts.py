"""Migration 0008 adds the alert and sample tables to a 0007 database, and its downgrade removes them."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect

from recordhound.db.engine import make_engine
from recordhound.db.migrate import alembic_config, current_revision, upgrade

NEW = {"stock_changes", "crawl_samples", "alert_rules", "alert_deliveries"}


def test_migration_0008_up_and_down(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine, "0007")
    assert not NEW & set(inspect(engine).get_table_names())
    upgrade(engine, "0008")
    assert current_revision(engine) == "0008" and NEW <= set(inspect(engine).get_table_names())
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0007")
    assert current_revision(engine) == "0007" and not NEW & set(inspect(engine).get_table_names())
    engine.dispose()
