"""The product schema's revision without SQLAlchemy: the newest one packaged (the migration files'
names, see ``migrate.py``) and the one a database holds (one row of ``alembic_version``), read with
the database's own driver. A crawl's start-up check uses it: the crawler leaves the product database
to its writer process and never loads SQLAlchemy (``pipelines/store.py``; about 0.2 s of a node's
start, docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import sqlite3
from importlib import resources
from typing import Any

from recordhound.db import pg_connect_args
from recordhound.exceptions import first_line


class Unreachable(Exception):
    """The database did not answer; the message is its driver's reason, first line."""


class NotPlain(Exception):
    """A URL this module does not read (another driver, SQLite URI options): ask SQLAlchemy."""


@functools.cache
def packaged_head() -> str:
    """The newest revision shipped, from the migration files' names (Alembic's head: see ``migrate.py``)."""
    versions = resources.files("recordhound.db") / "migrations" / "versions"
    return max(f.name for f in versions.iterdir() if f.name[:4].isdigit() and f.name.endswith(".py"))[:4]


def is_newer(revision: str | None) -> bool:
    """A stored revision newer than any this code has (a newer recordhound migrated the database)."""
    head = packaged_head()
    return revision is not None and revision.isdigit() and len(revision) == len(head) and revision > head


def unusable_schema(where: str, revision: str | None) -> str | None:
    """What to say of a database at ``where`` whose stored schema ``revision`` this code cannot migrate: one
    newer than this code's (a newer recordhound migrated it), or one no recordhound wrote (another application
    that Alembic manages too: recordhound's revisions are numbered). None: it can be migrated."""
    if revision is None:
        return None
    if not (revision.isdigit() and len(revision) == len(packaged_head())):
        return (f"the product database at {where} has schema revision {revision!r}, which is not recordhound's "
                f"(a database of another application?): set DATABASE_URL to a database of recordhound's own")
    if is_newer(revision):
        return (f"the product database at {where} has schema revision {revision}, newer than this recordhound's "
                f"{packaged_head()}: upgrade recordhound on this node, or set DATABASE_URL to another database")
    return None


def stored_revision(url: str) -> str | None:
    """The revision stored at ``url`` (None: no schema yet, or an in-memory SQLite database).

    Raises :class:`Unreachable` when the database cannot be reached, :class:`NotPlain` for a URL that
    only SQLAlchemy reads."""
    scheme, sep, rest = url.partition("://")
    if not sep or "?" in rest:
        raise NotPlain(url)
    if scheme in ("sqlite", "sqlite+pysqlite"):
        path = rest[1:] if rest.startswith("/") else rest
        return None if path in ("", ":memory:") else _sqlite_revision(path)
    if scheme in ("postgresql", "postgresql+psycopg"):
        return _postgresql_revision(f"postgresql://{rest}")
    raise NotPlain(url)


def _sqlite_revision(path: str) -> str | None:
    try:
        connection = sqlite3.connect(path, timeout=5)
    except sqlite3.Error as exc:
        raise Unreachable(first_line(exc)) from exc
    try:
        return _one(connection.execute("SELECT version_num FROM alembic_version").fetchall())
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc) or "locked" in str(exc):  # no schema yet; a writer's lock: it answers
            return None
        raise Unreachable(first_line(exc)) from exc
    except sqlite3.DatabaseError as exc:  # not a database ("file is not a database")
        raise Unreachable(first_line(exc)) from exc
    finally:
        connection.close()


def _postgresql_revision(conninfo: str) -> str | None:
    import psycopg

    try:
        connection = psycopg.connect(conninfo, **pg_connect_args(conninfo))
    except psycopg.OperationalError as exc:
        raise Unreachable(first_line(exc)) from exc
    except psycopg.Error as exc:  # a URL libpq reads otherwise than SQLAlchemy (an option only SQLAlchemy knows)
        raise NotPlain(conninfo) from exc
    try:
        with connection.cursor() as cursor:
            return _one(cursor.execute("SELECT version_num FROM alembic_version").fetchall())
    except psycopg.Error:  # no schema yet, or a role that may not read it: the writer's open will say
        return None
    finally:
        connection.close()


def _one(rows: list[Any]) -> str | None:
    return str(rows[0][0]) if len(rows) == 1 else None
