"""Which failures of a write are worth retrying, which belong to one item, and which refuse the
apply worker for good.

SQLAlchemy is not imported here: the crawler asks these questions of what its writer process sent
back, and never loads SQLAlchemy itself (``pipelines/store.py``). An SQLAlchemy error can only
exist once ``sqlalchemy.exc`` is loaded (unpickling one loads it), so its classes are looked up
there when they are.
"""

from __future__ import annotations

import sqlite3
import sys
from concurrent.futures import BrokenExecutor

from recordhound.exceptions import RecordhoundError, StoreError, reason
from recordhound.review.docstore import ReviewStoreError


class WriteRaceError(StoreError):
    """Review decisions kept landing while a batch was being parked: write it again."""


class RefusalError(RecordhoundError):
    """The product DB or the review queue refuses the apply worker for good (``refusal``): it stops."""


TRANSIENT = (BrokenExecutor, ReviewStoreError, WriteRaceError)
TRANSIENT_SQLALCHEMY = ("DisconnectionError", "InterfaceError", "OperationalError")
ROW_SQLALCHEMY = ("DataError", "IntegrityError")
_MIGRATE = "bring its schema to the current revision (`recordhound db upgrade`)"
_WRITABLE = "make the database file, its folder and its -wal and -shm files writable (or its mount read-write)"
_PASSWORD = "give RECORDHOUND_REDIS_URL the password and user Redis expects (redis://user:password@host)"
# Errors of the classes above (an outage's) that no wait cures: the store answers, and refuses. By the one
# signal each has: SQLite's error name (``sqlite_errorname``), else its message (SQLITE_ERROR is generic), a
# PostgreSQL SQLSTATE, a Redis error code. An outage (refused connection, a server restarting, "database is
# locked", 57P01 admin shutdown, BUSY, LOADING) is none of these. (signal, what to do)
REFUSALS: tuple[tuple[str, str], ...] = (
    ("SQLITE_READONLY", _WRITABLE),  # "attempt to write a readonly database": chmod 0444, a read-only mount
    ("SQLITE_READONLY_DIRECTORY", _WRITABLE),
    ("SQLITE_READONLY_DBMOVED", "the database file was moved or deleted while open: put it back"),
    ("SQLITE_CORRUPT", "restore the database file from a backup"),  # "database disk image is malformed"
    ("SQLITE_NOTADB", "point the database URL at a SQLite database file"),  # "file is not a database"
    ("no such table", _MIGRATE),  # SQLITE_ERROR: a database never migrated
    ("no such column", _MIGRATE),
    ("42501", "grant the database role SELECT, INSERT, UPDATE and DELETE on the product tables"),
    ("42P01", _MIGRATE),  # undefined_table
    ("42703", _MIGRATE),  # undefined_column
    ("WRONGTYPE", "a key under the review queue's prefix holds another type: give the queue a prefix of its own "
                  "(RECORDHOUND_REDIS_PREFIX) or remove that key"),
    ("NOAUTH", _PASSWORD),
    ("WRONGPASS", _PASSWORD),
    ("NOPERM", "let the Redis user (its ACL) run the review queue's commands on the keys under its prefix"),
)


def _is_sqlalchemy(exc: BaseException, names: tuple[str, ...]) -> bool:
    loaded = sys.modules.get("sqlalchemy.exc")
    return loaded is not None and isinstance(exc, tuple(getattr(loaded, name) for name in names))


def is_transient(exc: BaseException) -> bool:
    """The database or the review queue is not there right now (or a race): retry the batch.

    PostgreSQL's serialization failures and deadlocks are ``OperationalError`` subclasses. A refusal
    (``refusal``) is transient here too: the crawl's store waits on it with its items kept; the apply
    worker asks ``refusal`` first and stops."""
    return (isinstance(exc, TRANSIENT) or bool(getattr(exc, "connection_invalidated", False))
            or _is_sqlalchemy(exc, TRANSIENT_SQLALCHEMY))


def is_row_error(exc: BaseException) -> bool:
    """The database refused a value (a length, a range, a constraint): one item's problem."""
    return _is_sqlalchemy(exc, ROW_SQLALCHEMY) and not is_transient(exc)


def describe(exc: BaseException) -> str:
    """The database's own reason, first line only (no SQL, no parameters)."""
    return f"the database refused it: {reason(exc)}"


def refusal(exc: BaseException) -> tuple[BaseException, str] | None:
    """The error (``exc`` or one behind it: a driver's, a review queue's cause) that is one of the
    ``REFUSALS``, and what to do; None for anything else (an outage, a bug, bad data)."""
    for error in _chain(exc):
        signal = _signal(error)
        for refused_by, advice in REFUSALS:
            if signal is not None and (signal == refused_by or signal.startswith(f"{refused_by}:")):
                return error, advice
    return None


def refused(exc: BaseException, database: str) -> RefusalError | None:
    """The apply worker's one-line error for a refusal (``refusal``): which store, why, what to do;
    ``database``: the product database's URL, its password hidden. None: not a refusal."""
    found = refusal(exc)
    if found is None:
        return None
    error, advice = found
    queue = next((e for e in _chain(exc) if isinstance(e, ReviewStoreError)), None)
    where = f"the {queue}" if queue is not None else (
        f"the product database ({database}) refused the write: {reason(error)}")
    return RefusalError(f"{where}; {advice}; then start the apply worker again: the decisions it held "
                        "wait in the approved queue")


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found:
        found.append(current)
        current = getattr(current, "orig", None) or current.__cause__
    return found


def _signal(exc: BaseException) -> str | None:
    """An error's name, code or (SQLITE_ERROR) message, as ``REFUSALS`` names it."""
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", None)
        return str(exc) if name in (None, "SQLITE_ERROR") else name
    sqlstate = getattr(exc, "sqlstate", None)  # psycopg's errors
    if isinstance(sqlstate, str):
        return sqlstate
    loaded = sys.modules.get("redis.exceptions")
    if loaded is None or not isinstance(exc, (loaded.ResponseError, loaded.AuthenticationError)):
        return None
    code = getattr(exc, "status_code", None) or str(exc).split(" ", 1)[0]
    return "NOAUTH" if isinstance(exc, loaded.AuthenticationError) else code  # "ERR invalid password" too
