"""A process that writes the catalog puts the id sequences back at ``max(id)`` first (``db/ids.align_sequences``,
from ``catalog.writer.open_writer``):
never the sequence of a table whose rows take their ids from it without the write lock (admin users),
where another process's insert may hold a value not committed yet."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert

from recordhound.admin.users import create_user
from recordhound.db.engine import make_engine, writing
from recordhound.db.ids import align_sequences
from recordhound.db.migrate import open_database
from recordhound.db.models import AdminUser
from tests.services import PostgresDatabase


def test_opening_the_database_during_an_admin_user_insert_leaves_its_sequence_alone() -> None:
    with PostgresDatabase() as database:
        engine, other = open_database(database.url), make_engine(database.url)
        try:
            create_user(engine, "first", "a-long-password-1")
            with other.begin() as conn:  # `recordhound admin user add` in flight: its id taken, not committed
                taken = conn.execute(insert(AdminUser).values(
                    name="second", password_hash="x", created_at=datetime.now(UTC), session_epoch=0,
                ).returning(AdminUser.id)).scalar_one()
                with writing(engine) as aligning:  # a writer starts meanwhile (an apply worker, an import)
                    align_sequences(aligning)
            create_user(engine, "third", "a-long-password-3")  # before: duplicate key admin_users_pkey
            with engine.connect() as conn:
                assert [tuple(r) for r in conn.exec_driver_sql("SELECT id, name FROM admin_users ORDER BY id")] == [
                    (1, "first"), (taken, "second"), (3, "third")]
        finally:
            engine.dispose()
            other.dispose()
