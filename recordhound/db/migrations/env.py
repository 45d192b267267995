"""Alembic environment: runs on the connection recordhound hands over (``db/migrate.py``)."""

from __future__ import annotations

from alembic import context
from sqlalchemy.schema import SchemaItem

from recordhound.db.models import Base

OWN_TABLES = set(Base.metadata.tables) | {"alembic_version"}


def include_object(obj: SchemaItem, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    """Autogenerate must never propose dropping tables recordhound does not own."""
    return not (type_ == "table" and reflected and name not in OWN_TABLES)


def run_migrations_online() -> None:
    connection = context.config.attributes["connection"]
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        include_object=include_object,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
