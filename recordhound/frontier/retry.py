"""Retries in the frontier: which failures are transient, and how long a retry waits.

Scrapy's RetryMiddleware retries at once, in memory; here a transient failure goes back to the
frontier with a not-before time (exponential backoff with jitter, at least the server's
``Retry-After``), so a kill during the wait loses nothing and any node may take the retry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from enum import Enum
from typing import TYPE_CHECKING, Final

from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.misc import load_object

from recordhound.config import positive_float, positive_int
from recordhound.exceptions import ConfigError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

    from recordhound.sources.profile import RetrySpec

RETRY_AFTER_MAX_SECONDS = 3600.0  # a longer Retry-After is taken as this (the request still waits, stored)


class Stale(Enum):
    TAKEN_BACK = "taken back"


# What the frontier answers an errback of a lease the store took back while the page downloaded: the
# request's one outcome is the store's to give (queued again, leased by another node, or finished
# there already); nothing for this attempt to record (no retry of its own, no dead letter).
TAKEN_BACK: Final = Stale.TAKEN_BACK


@dataclass(frozen=True)
class Problem:
    """What went wrong with one attempt: ``kind`` groups dead letters ("http_503", "download_failed")."""

    kind: str
    message: str
    transient: bool = False
    retry_after: float | None = None  # seconds the server asked us to wait

    @property
    def reason(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class RetryPolicy:
    base_seconds: float
    cap_seconds: float
    max_attempts: int  # attempts in all, the first included
    http_codes: frozenset[int]
    exceptions: tuple[type[BaseException], ...]  # Scrapy's RETRY_EXCEPTIONS

    @classmethod
    def from_settings(cls, settings: BaseSettings, spec: RetrySpec | None = None) -> RetryPolicy:
        try:
            codes = frozenset(int(c) for c in settings.getlist("RECORDHOUND_RETRY_HTTP_CODES"))
        except ValueError as exc:
            raise ConfigError(f"RECORDHOUND_RETRY_HTTP_CODES must be HTTP status codes, got "
                              f"{settings.get('RECORDHOUND_RETRY_HTTP_CODES')!r}") from exc
        exceptions = tuple(e if isinstance(e, type) else load_object(e) for e in settings.getlist("RETRY_EXCEPTIONS"))
        policy = cls(positive_float(settings, "RECORDHOUND_RETRY_BASE_SECONDS"),
                     positive_float(settings, "RECORDHOUND_RETRY_CAP_SECONDS"),
                     positive_int(settings, "RECORDHOUND_RETRY_MAX_ATTEMPTS"), codes, exceptions)
        if spec is None:
            return policy
        return cls(spec.base_seconds or policy.base_seconds, spec.cap_seconds or policy.cap_seconds,
                   spec.max_attempts or policy.max_attempts, codes | frozenset(spec.http_codes), exceptions)

    def classify(self, failure: Failure) -> Problem:
        """An errback's failure as a Problem: HTTP codes of the policy and Scrapy's retryable
        download errors are transient; everything else is permanent."""
        error = failure.value
        if isinstance(error, HttpError):
            response = error.response
            header = response.headers.get(b"Retry-After")
            return Problem(f"http_{response.status}", "HTTP error response", response.status in self.http_codes,
                           retry_after_seconds(header.decode("latin-1")) if header else None)
        return Problem("download_failed", f"{type(error).__name__}: {failure.getErrorMessage()}",
                       isinstance(error, self.exceptions))

    def retry_in(self, tries: int, problem: Problem) -> float | None:
        """Seconds the request waits before its next attempt after ``tries`` failed ones, or
        None: it failed for good (permanent, or its last attempt)."""
        if not problem.transient or tries >= self.max_attempts:
            return None
        backoff = min(self.cap_seconds, self.base_seconds * 2 ** (tries - 1))
        wait = backoff / 2 + random.uniform(0, backoff / 2)  # noqa: S311 - jitter, not security
        if problem.retry_after is not None:
            wait = max(wait, min(problem.retry_after, RETRY_AFTER_MAX_SECONDS))
        return wait


def retry_after_seconds(value: str) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date (None: unreadable)."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
