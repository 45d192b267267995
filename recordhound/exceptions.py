"""The one exception family of recordhound: every error a user can cause derives from it."""

from __future__ import annotations


def reason(exc: BaseException) -> str:
    """Why ``exc`` happened, on one line: the class and the first line of the underlying error (a
    database driver's, not SQLAlchemy's wrapper with its SQL and parameters)."""
    orig = getattr(exc, "orig", None) or exc
    return f"{type(orig).__name__}: {first_line(orig)}" if str(orig).strip() else type(orig).__name__


def first_line(exc: BaseException) -> str:
    """The first line of the underlying error's message (or its class, when it says nothing): a
    driver's "connection refused", for messages that say what could not be reached."""
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


class RecordhoundError(Exception):
    """Base class: the message says what was wrong, where, and what to do."""


class Unavailable(RecordhoundError):
    """A service the crawl needs (Redis, the product database) cannot be reached now: nothing was done,
    and the same command is worth running again later. ``scrapy crawl`` exits with ``EXIT_CODE``
    (sysexits' EX_TEMPFAIL), so a caller (``recordhound worker``, cron) can tell it from a user's error (1)."""

    EXIT_CODE = 75


class ConfigError(RecordhoundError):
    """A setting has a value recordhound cannot use."""


class ProfileError(RecordhoundError):
    """A source profile is missing or invalid; names the file and the key."""

    def __init__(self, path: str, key: str, problem: str) -> None:
        self.path = path
        self.key = key
        self.problem = problem
        super().__init__(f"invalid source profile {path}: {key}: {problem}")


class FieldError(RecordhoundError):
    """A scraped field could not be parsed; recorded on the item, never raised out of a callback."""


class CutOffError(FieldError):
    """A document ends before it is complete (a download cut short, or a generator that broke off):
    nothing in it is trusted, and it is worth another try."""


class StoreError(RecordhoundError):
    """The product database could not take a batch of items."""


class AlertError(RecordhoundError):
    """An alert rule is invalid (unknown source, missing threshold, a notification URL Apprise
    cannot use), or names a rule that does not exist."""
