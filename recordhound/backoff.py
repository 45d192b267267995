"""One backoff rule for every retry of an unreachable service (the frontier, the product DB), and the
retry loop of the store's calls (its batches, the source's opening, the crawl's end; ``retried``: a file
import's, which runs in a thread of its own)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

BASE_SECONDS = 0.25
T = TypeVar("T")


def backoff_seconds(attempt: int, cap_seconds: float) -> float:
    """0.5 s, 1 s, 2 s, ... for attempts 1, 2, 3, ..., never above ``cap_seconds``."""
    return min(cap_seconds, BASE_SECONDS * 2 ** min(attempt, 10))


async def retrying(call: Callable[[], Awaitable[T]], is_transient: Callable[[Exception], bool], cap_seconds: float,
                   on_retry: Callable[[Exception, int, float], None], attempts: int | None = None) -> T:
    """``call()``, tried again after each transient failure (``on_retry(error, attempt, delay)`` is
    told first), ``attempts`` times in all when given, else until it succeeds; then its error."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            attempt += 1
            if not is_transient(exc) or (attempts is not None and attempt >= attempts):
                raise
            delay = backoff_seconds(attempt, cap_seconds)
            on_retry(exc, attempt, delay)
            await asyncio.sleep(delay)


def retried(call: Callable[[], T], is_transient: Callable[[Exception], bool], cap_seconds: float,
            on_retry: Callable[[Exception, int, float], None], wait: Callable[[float], None] = time.sleep) -> T:
    """``retrying`` for a caller without an event loop: ``wait(delay)`` between tries (one that hears a stop
    raises, ending the retries)."""
    attempt = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                raise
            attempt += 1
            delay = backoff_seconds(attempt, cap_seconds)
            on_retry(exc, attempt, delay)
            wait(delay)
