"""``BEGIN IMMEDIATE`` transactions on a raw sqlite3 connection (autocommit mode): the file's
write lock is taken at the start, so two processes never both read and then fail to write."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # the body failed, or COMMIT itself did (busy): never leave it open
            db.execute("ROLLBACK")
        raise


@contextmanager
def snapshot(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A read transaction: every SELECT inside sees the same committed state of the file."""
    db.execute("BEGIN DEFERRED")
    try:
        yield db
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")  # it only read
