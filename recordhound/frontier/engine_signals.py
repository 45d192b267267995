"""What Scrapy's signals tell the frontier about each request it handed out: a response arrived
(its politeness slot is free, a recheck's validators are read), it left the downloader, the engine
dropped it or one of its children, its items settled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import DropItem
from twisted.internet import reactor

from recordhound import failpoints
from recordhound.frontier import recrawl
from recordhound.exceptions import StoreError
from recordhound.frontier.registry import FRONTIER_ID, PARENT_ID

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from recordhound.frontier.scheduler import FrontierScheduler


class ItemNotStored(StoreError, DropItem):
    """The product store cannot take this item and the crawl is stopping: the item is dropped, and
    its page is neither acked nor failed (its lease is given back when the crawl closes)."""


class EngineSignals:
    def __init__(self, scheduler: FrontierScheduler) -> None:
        self.s = scheduler
        # when _look and a waiting close's tries run (a test's Clock; zope's interface methods confuse
        # mypy's count of arguments)
        self.clock: Any = reactor
        self._to_look: list[tuple[Request, object | None]] = []  # once the engine scheduled them: children,
        # and redirects (retries) with the hand-out of the request they stand for

    def connect(self, crawler: Crawler) -> None:
        for handler, signal in ((self._response_received, signals.response_received),
                                (self._item_settled, signals.item_scraped),
                                (self._item_dropped, signals.item_dropped),
                                (self._item_error, signals.item_error),
                                (self._left_downloader, signals.request_left_downloader),
                                (self._scheduled, signals.request_scheduled),
                                (self._dropped, signals.request_dropped)):
            crawler.signals.connect(handler, signal=signal)

    def _response_received(self, response: Any, request: Request) -> None:
        frontier_id = request.meta.get(FRONTIER_ID)
        if frontier_id is not None:
            self.s.outcomes.response_received(frontier_id)
            held = self.s.book.get(frontier_id)
            if self.s.policy.recrawl.active and held is not None and frontier_id in self.s.outcomes:
                held.seen = recrawl.Seen.of(response)
        if self.s.gate is not None:
            self.s.gate.feedback(request, response.status)
            self.s.gate.free(request)  # also when a middleware (cassette, HTTP cache) answered it

    def _left_downloader(self, request: Request, spider: Spider) -> None:
        if self.s.gate is not None:
            self.s.gate.free(request)

    def _scheduled(self, request: Request, spider: Spider) -> None:
        """A child (or a redirect standing for its parent) is about to be scheduled; a
        ``request_scheduled`` handler may still refuse it (Scrapy's off-site filter does), and then
        ``enqueue_request`` never sees it: look once the engine's synchronous scheduling step is over."""
        replacement = FRONTIER_ID in request.meta and self.s.outcomes.is_downloading(request.meta[FRONTIER_ID])
        if PARENT_ID in request.meta or replacement:
            if not self._to_look:
                self.clock.callLater(0, self._look)
            self._to_look.append((request, self.s.outcomes.handing(request.meta[FRONTIER_ID]) if replacement else None))

    def _look(self) -> None:
        looked, self._to_look = self._to_look, []
        self.settle_if_dropped([request for request, _ in looked])
        outcomes = self.s.outcomes
        for request, handing in looked:  # a redirect (or retry) the engine dropped: its parent ends with it
            if handing is None:
                continue  # a child
            frontier_id = request.meta[FRONTIER_ID]
            if outcomes.handing(frontier_id) is handing and outcomes.is_downloading(frontier_id):
                outcomes.failed(frontier_id, f"redirect_dropped: to {request.url} (off-site or refused)")

    def settle_if_dropped(self, requests: list[Request]) -> None:
        """Children the engine dropped before ``enqueue_request`` settle their parent's count,
        as a duplicate does (``enqueue_request`` takes PARENT_ID out of the ones it saw)."""
        for request in requests:
            child_of = request.meta.pop(PARENT_ID, None)
            if child_of is not None:
                self.s.inc("dropped_children")
                self.s.outcomes.child_enqueued(child_of)

    def _dropped(self, request: Request, spider: Spider) -> None:
        if self.s.gate is not None:
            self.s.gate.free(request)
        self.settle_if_dropped([request])

    def _item_settled(self, item: Any, response: Any, **kwargs: Any) -> None:
        if (frontier_id := _frontier_id(response)) is not None:
            failpoints.hit("spider.item_settled", response.url)
            self.s.outcomes.item_settled(frontier_id)

    def _item_dropped(self, item: Any, response: Any, exception: BaseException, **kwargs: Any) -> None:
        if not isinstance(exception, ItemNotStored):  # it is: the page stays unsettled, given back at close
            self._item_settled(item, response)

    def _item_error(self, item: Any, response: Any, failure: Any, **kwargs: Any) -> None:
        if (frontier_id := _frontier_id(response)) is not None:
            self.s.outcomes.item_settled(frontier_id, f"item pipeline error: {failure.getErrorMessage()}")


def _frontier_id(response: Any) -> int | None:
    """The frontier id behind an item signal's ``response`` (a Failure for errback items)."""
    return getattr(response, "meta", {}).get(FRONTIER_ID) if hasattr(response, "request") else None
