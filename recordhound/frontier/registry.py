"""Find the frontier scheduler of a crawler (the middleware and the spider report to it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

from recordhound.frontier.outcomes import Outcomes

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class Frontier(Protocol):
    """What the middleware and the spider's errbacks need of the scheduler (no import of it)."""

    outcomes: Outcomes

    def claim_start(self) -> str: ...

    def start_finished(self) -> None: ...


_schedulers: WeakKeyDictionary[Crawler, Frontier] = WeakKeyDictionary()

FRONTIER_ID = "recordhound_frontier_id"  # request.meta key of a leased request's id
PARENT_ID = "recordhound_parent_id"  # request.meta key of a yielded request: its parent's id (popped)


def register(crawler: Crawler, scheduler: Frontier) -> None:
    _schedulers[crawler] = scheduler


def lookup(crawler: Crawler) -> Frontier | None:
    return _schedulers.get(crawler)


def report_failure(crawler: Crawler, request: object, reason: str) -> None:
    """Errbacks call this: the request failed for good and is recorded with ``reason``."""
    scheduler = lookup(crawler)
    frontier_id = getattr(request, "meta", {}).get(FRONTIER_ID)
    if scheduler is not None and frontier_id is not None:
        scheduler.outcomes.failed(frontier_id, reason)
