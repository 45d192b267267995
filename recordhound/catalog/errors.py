"""Which failures of a write are worth retrying, and which belong to one item."""

from __future__ import annotations

from concurrent.futures import BrokenExecutor

from sqlalchemy.exc import DataError, DisconnectionError, IntegrityError, InterfaceError, OperationalError

from recordhound.exceptions import StoreError
from recordhound.review.docstore import ReviewStoreError


class WriteRaceError(StoreError):
    """Review decisions kept landing while a batch was being parked: write it again."""


TRANSIENT = (BrokenExecutor, DisconnectionError, InterfaceError, OperationalError, ReviewStoreError,
             WriteRaceError)


def is_transient(exc: BaseException) -> bool:
    """The database or the review queue is not there right now (or a race): retry the batch.

    PostgreSQL's serialization failures and deadlocks are ``OperationalError`` subclasses."""
    return isinstance(exc, TRANSIENT) or bool(getattr(exc, "connection_invalidated", False))


def is_row_error(exc: BaseException) -> bool:
    """The database refused a value (a length, a range, a constraint): one item's problem."""
    return isinstance(exc, DataError | IntegrityError) and not is_transient(exc)


def describe(exc: BaseException) -> str:
    """The database's own reason, first line only (no SQL, no parameters)."""
    orig = getattr(exc, "orig", None) or exc
    first = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return f"the database refused it: {type(orig).__name__}: {first}"
