"""Engines for the product database: SQLite (WAL, immediate transactions) or PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text

from recordhound.db import pg_connect_args

# One writer at a time per database keeps IDs consecutive without ON CONFLICT
# (which burns a sequence value per conflicting row in PostgreSQL).
PG_WRITE_LOCK = 0x72686F756E64  # "rhound"


def make_engine(url: str, **kwargs: Any) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60}, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin_immediate)
        return engine
    return create_engine(url, pool_pre_ping=True, connect_args=pg_connect_args(url), **kwargs)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # let the "begin" hook control transactions
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin_immediate(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def lock_for_writing(conn: Connection) -> None:
    """Serialize writers for the rest of this transaction (SQLite already is)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_WRITE_LOCK})


@contextmanager
def writing(target: Engine | Connection) -> Iterator[Connection]:
    """A connection holding the write lock: a transaction of its own on an engine, or the caller's
    transaction when given its connection (several writes that commit together)."""
    if isinstance(target, Connection):
        lock_for_writing(target)
        yield target
        return
    with target.begin() as conn:
        lock_for_writing(conn)
        yield conn
