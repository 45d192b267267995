"""Find the frontier scheduler of a crawler (the middleware and the spider report to it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

from recordhound.frontier.outcomes import Outcomes

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from recordhound.frontier.leasebook import LeaseBook, Held

    from recordhound.frontier.retry import Problem, Stale


class Frontier(Protocol):
    """What the middleware and the spider's errbacks need of the scheduler (no import of it)."""

    outcomes: Outcomes
    book: LeaseBook

    def claim_start(self) -> str: ...

    def start_finished(self) -> None: ...

    def report(self, frontier_id: int, problem: Problem) -> float | Stale | None: ...


_schedulers: WeakKeyDictionary[Crawler, Frontier] = WeakKeyDictionary()

FRONTIER_ID = "recordhound_frontier_id"  # request.meta key of a leased request's id
PARENT_ID = "recordhound_parent_id"  # request.meta key of a yielded request: its parent's id (popped)
STAT = "recordhound/frontier/"  # prefix of the frontier's stats (the scheduler's and its upkeep's)
NOT_JOINED_STAT = STAT + "not_joined"  # set (to the close reason) when this node gave up joining
KIND_META = "recordhound_kind"  # request.meta key: the link kind ("listing", "product", ...) of the profile


def register(crawler: Crawler, scheduler: Frontier) -> None:
    _schedulers[crawler] = scheduler


def lookup(crawler: Crawler) -> Frontier | None:
    return _schedulers.get(crawler)


def report_failure(crawler: Crawler, request: object, problem: Problem) -> float | Stale | None:
    """Errbacks call this. Returns the seconds until the request is tried again (a transient
    problem with attempts left); None: it failed for good, recorded with the problem's reason; or
    TAKEN_BACK: the store took this lease back while the page downloaded; its outcome is the
    store's to give (queued again, fetched by another node, or already finished there), so this
    attempt has nothing to record."""
    scheduler = lookup(crawler)
    frontier_id = getattr(request, "meta", {}).get(FRONTIER_ID)
    if scheduler is None or frontier_id is None:
        return None
    return scheduler.report(frontier_id, problem)


def requests_in_hand(crawler: Crawler) -> int:
    """Requests this node leased and has not handed to the engine yet (waiting for their host's
    politeness slot, or for the engine to ask: ``engine_access.will_ask``): 0 without a frontier scheduler."""
    scheduler = lookup(crawler)
    return len(scheduler.book.in_hand) if scheduler is not None else 0


def held_lease(crawler: Crawler, request: object) -> Held | None:
    """This process's lease of ``request`` (its recheck state; what its callback keeps in the next
    one), or None: not a request of the frontier."""
    scheduler = lookup(crawler)
    frontier_id = getattr(request, "meta", {}).get(FRONTIER_ID)
    if scheduler is None or frontier_id is None:
        return None
    return scheduler.book.get(frontier_id)
