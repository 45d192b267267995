"""Which failures of a write are worth retrying, and which belong to one item.

SQLAlchemy is not imported here: the crawler asks these questions of what its writer process sent
back, and never loads SQLAlchemy itself (``pipelines/store.py``). An SQLAlchemy error can only
exist once ``sqlalchemy.exc`` is loaded (unpickling one loads it), so its classes are looked up
there when they are.
"""

from __future__ import annotations

import sys
from concurrent.futures import BrokenExecutor

from recordhound.exceptions import StoreError, reason
from recordhound.review.docstore import ReviewStoreError


class WriteRaceError(StoreError):
    """Review decisions kept landing while a batch was being parked: write it again."""


TRANSIENT = (BrokenExecutor, ReviewStoreError, WriteRaceError)
TRANSIENT_SQLALCHEMY = ("DisconnectionError", "InterfaceError", "OperationalError")
ROW_SQLALCHEMY = ("DataError", "IntegrityError")


def _is_sqlalchemy(exc: BaseException, names: tuple[str, ...]) -> bool:
    loaded = sys.modules.get("sqlalchemy.exc")
    return loaded is not None and isinstance(exc, tuple(getattr(loaded, name) for name in names))


def is_transient(exc: BaseException) -> bool:
    """The database or the review queue is not there right now (or a race): retry the batch.

    PostgreSQL's serialization failures and deadlocks are ``OperationalError`` subclasses."""
    return (isinstance(exc, TRANSIENT) or bool(getattr(exc, "connection_invalidated", False))
            or _is_sqlalchemy(exc, TRANSIENT_SQLALCHEMY))


def is_row_error(exc: BaseException) -> bool:
    """The database refused a value (a length, a range, a constraint): one item's problem."""
    return _is_sqlalchemy(exc, ROW_SQLALCHEMY) and not is_transient(exc)


def describe(exc: BaseException) -> str:
    """The database's own reason, first line only (no SQL, no parameters)."""
    return f"the database refused it: {reason(exc)}"
