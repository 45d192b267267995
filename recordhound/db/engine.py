"""Engines for the product database: SQLite (WAL, immediate transactions) or PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text

# One writer at a time per database keeps IDs consecutive without ON CONFLICT
# (which burns a sequence value per conflicting row in PostgreSQL).
_PG_WRITE_LOCK = 0x72686F756E64  # "rhound"


def make_engine(url: str, **kwargs: Any) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60}, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin_immediate)
        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


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
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_WRITE_LOCK})
