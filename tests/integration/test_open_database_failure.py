"""An engine whose schema could not be brought to the head is disposed of at once: a daemon that tries again
while it waits (``apply --follow``, ``recordhound worker``) holds no session per failed try until the garbage
collector comes by (a real PostgreSQL database of its own role, its sessions counted)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import make_url

from recordhound.db.migrate import open_database
from recordhound.exceptions import RecordhoundError
from tests.services import PG_ADMIN_URL, PostgresDatabase

TRIES = 3


@pytest.fixture
def gc_off() -> Iterator[None]:
    gc.collect()
    gc.disable()  # (what the collector would free later is what the test looks for)
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def _sessions(database: PostgresDatabase) -> int:
    """Sessions of the test's role, counted from a session of another database."""
    with psycopg.connect(_plain(PG_ADMIN_URL)) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s",
                            (database.role,)).fetchone()[0]  # type: ignore[index]


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def test_a_schema_newer_than_the_code_leaves_no_session_behind(gc_off: None) -> None:
    with PostgresDatabase(own_role=True) as database:
        with psycopg.connect(_plain(database.url)) as conn:  # (committed on leaving)
            conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
            conn.execute("INSERT INTO alembic_version VALUES ('9999')")
        assert _sessions(database) == 0
        for _ in range(TRIES):
            with pytest.raises(RecordhoundError, match="newer"):
                open_database(database.url)
        assert _sessions(database) == 0
