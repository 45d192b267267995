"""Which errors refuse the apply worker for good (``catalog.errors.REFUSALS``) and which are outages it
waits out: real SQLite errors, psycopg's classes for PostgreSQL's SQLSTATEs, redis-py's parse of the
server's replies, as they reach the worker (wrapped by SQLAlchemy, or by the review queue's store)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg.errors
import pytest
import redis
from redis._parsers.base import BaseParser
from sqlalchemy.exc import OperationalError, ProgrammingError

from recordhound.catalog.errors import is_transient, refusal, refused
from recordhound.review.docstore import ReviewStoreError


def _sqlite_error(tmp_path: Path, statement: str, uri: str = "") -> sqlite3.Error:
    db = sqlite3.connect(uri or str(tmp_path / "db.sqlite3"), uri=bool(uri), timeout=0)
    try:
        db.execute(statement)
    except sqlite3.Error as exc:
        return exc
    finally:
        db.close()
    raise AssertionError(f"{statement} did not fail")


def _queue(exc: Exception) -> ReviewStoreError:
    """As the review queue's store reports it (``docstore.py``)."""
    wrapped = ReviewStoreError(f"review queue on Redis (rh): {exc}")
    wrapped.__cause__ = exc
    return wrapped


def _sqlalchemy(orig: Exception, kind: type[OperationalError] | type[ProgrammingError] = OperationalError) -> Exception:
    return kind("INSERT INTO artists ...", {}, orig)


def test_sqlite_refusals_and_outages(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "db.sqlite3").execute("CREATE TABLE t (a)").connection.close()
    read_only = _sqlite_error(tmp_path, "INSERT INTO t VALUES (1)", f"file:{tmp_path / 'db.sqlite3'}?mode=ro")
    (tmp_path / "garbage.sqlite3").write_bytes(b"not a database at all" * 100)
    not_a_db = _sqlite_error(tmp_path, "SELECT 1 FROM t", f"file:{tmp_path / 'garbage.sqlite3'}")
    for refusing in (read_only, not_a_db, _sqlite_error(tmp_path, "SELECT * FROM missing"),
                     _sqlite_error(tmp_path, "SELECT missing FROM t")):
        assert refusal(_sqlalchemy(refusing)) is not None, refusing
    holder = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    locked = _sqlite_error(tmp_path, "INSERT INTO t VALUES (1)")
    holder.close()
    assert str(locked) == "database is locked"
    assert refusal(_sqlalchemy(locked)) is None and is_transient(_sqlalchemy(locked))
    assert refusal(sqlite3.OperationalError("disk I/O error")) is None


def test_postgresql_refusals_and_outages() -> None:
    for refusing in (psycopg.errors.InsufficientPrivilege("permission denied for table artists"),
                     psycopg.errors.UndefinedTable('relation "artists" does not exist'),
                     psycopg.errors.UndefinedColumn('column "name_key" does not exist')):
        assert refusal(_sqlalchemy(refusing, ProgrammingError)) is not None, refusing
    for outage in (psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
                   psycopg.OperationalError("connection refused"),
                   psycopg.errors.SerializationFailure("could not serialize access")):
        assert refusal(_sqlalchemy(outage)) is None and is_transient(_sqlalchemy(outage)), outage


@pytest.mark.parametrize("reply", ["WRONGTYPE Operation against a key holding the wrong kind of value",
                                   "NOAUTH Authentication required.", "WRONGPASS invalid username-password pair",
                                   "NOPERM User rh has no permissions to run the 'hset' command",
                                   "ERR invalid password"])
def test_redis_refusals(reply: str) -> None:
    assert refusal(_queue(BaseParser.parse_error(reply))) is not None


@pytest.mark.parametrize("error", [redis.ConnectionError("Connection refused"), redis.TimeoutError(),
                                   BaseParser.parse_error("BUSY Redis is busy running a script"),
                                   BaseParser.parse_error("LOADING Redis is loading the dataset in memory"),
                                   BaseParser.parse_error("READONLY You can't write against a read only replica.")])
def test_redis_outages_are_waited_out(error: Exception) -> None:
    assert refusal(_queue(error)) is None and is_transient(_queue(error))


def test_the_worker_error_names_the_store_and_what_to_do(tmp_path: Path) -> None:
    missing = _sqlite_error(tmp_path, "SELECT * FROM artists")
    database = refused(_sqlalchemy(missing), "sqlite:////srv/product.sqlite3")
    assert str(database).startswith("the product database (sqlite:////srv/product.sqlite3) refused the write: "
                                    "OperationalError: no such table: artists; bring its schema to the current "
                                    "revision (`recordhound db upgrade`)"), database
    queue = refused(_queue(BaseParser.parse_error("WRONGTYPE Operation against a key")), "unused")
    assert str(queue).startswith("the review queue on Redis (rh): WRONGTYPE Operation against a key; a key under "
                                 "the review queue's prefix holds another type"), queue
    assert refused(redis.ConnectionError("Connection refused"), "unused") is None


def test_the_crawl_store_still_waits_on_a_refusal() -> None:
    """The crawl's store keeps its items and waits (``is_transient``); only the apply worker stops."""
    read_only = sqlite3.OperationalError("attempt to write a readonly database")
    read_only.sqlite_errorname = "SQLITE_READONLY"
    assert is_transient(_sqlalchemy(read_only)) and refusal(_sqlalchemy(read_only)) is not None
