"""The frontier store's reachability as this node sees it: down since when, when to try again.

A failed call marks the store down (the crawl pauses for the reason "frontier store", logged
once per outage, counted each time); the tick tries again with backoff, and the store counts as
reachable again only after a real round trip (``FrontierBackend.probe``), never because a tick
happened to touch nothing. Recovery then re-syncs the lease book with the store before the
crawl resumes (the scheduler's ``_resync``).
"""

from __future__ import annotations

import logging
import time

from recordhound.backoff import backoff_seconds
from recordhound.pause import EnginePause

logger = logging.getLogger(__name__)
REASON = "frontier store"


class Outage:
    def __init__(self, pause: EnginePause, retry_max_seconds: float) -> None:
        self.pause, self.retry_max_seconds = pause, retry_max_seconds
        self.since: float | None = None
        self._tries = 0
        self._retry_at = 0.0

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        if self.since is None:
            self.since = now
            logger.error("Frontier backend failed (%s: %s); pausing the crawl and retrying", type(exc).__name__, exc)
            self.pause.hold(REASON)
        self._tries += 1
        backoff = backoff_seconds(self._tries, self.retry_max_seconds)
        self._retry_at = now + backoff
        logger.warning("Frontier backend still unreachable (%s); next try in %.1f s", exc, backoff)

    def due(self) -> bool:
        """Whether the tick should try the store now (down, and the backoff has passed)."""
        return self.since is not None and time.monotonic() >= self._retry_at

    def recovered(self, then: str = "resuming") -> None:
        if self.since is None:
            return
        logger.warning("Frontier backend is reachable again after %.1f s; %s", time.monotonic() - self.since, then)
        self.since = None
        self._tries = 0
        self.pause.release(REASON)
