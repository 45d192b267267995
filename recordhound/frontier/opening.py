"""Opening the frontier for a crawl: the spider's policy, the store and the host gate, then joining
the crawl off the reactor (lock waits, another node's reset, a store lost while joining).

A node that gives up joining (the store stayed unreachable, it refused this node, as when its node
id is in use, or SIGINT/SIGTERM while it waited)
holds no lease, so the open succeeds and the crawl closes as soon as Scrapy has opened it: a
``spider_opened`` handler raises ``CloseSpider`` with the reason, and the store pipeline, told by
the stat ``NOT_JOINED_STAT``, opens nothing (it must not mark the source of a crawl other nodes
are running as interrupted). A ``CloseSpider`` from the scheduler's own ``open`` would skip
opening Scrapy's scraper, whose close then fails.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy import Spider, signals
from scrapy.exceptions import CloseSpider
from twisted.internet import threads

from recordhound import failpoints
from recordhound.errors import FATAL_STAT
from recordhound.frontier import lifecycle
from recordhound.frontier.backend import Counts
from recordhound.frontier.factory import make_backend
from recordhound.frontier.hostgate import HostGate
from recordhound.frontier.policy import CrawlPolicy
from recordhound.frontier.registry import NOT_JOINED_STAT
from recordhound.robots import RobotsUnavailable, robots_limits

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

    from recordhound.frontier.scheduler import FrontierScheduler

logger = logging.getLogger(__name__)
OPEN_TIMEOUT_SECONDS = 30.0  # opening runs on a thread: it may wait for a lock or a slow reset


class Opening:
    def __init__(self, scheduler: FrontierScheduler) -> None:
        self.s = scheduler
        self.stopping = threading.Event()  # set at reactor shutdown: a join that waits for the store gives up
        self.close_reason = ""  # the node did not join: the crawl closes, with this reason, once open

    def connect(self, crawler: Crawler) -> None:
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)

    def open(self, spider: Spider) -> Deferred[None]:
        """Connects and registers this node off the reactor thread."""
        from twisted.internet import reactor

        crawl = self.prepare(spider)
        clock: Any = reactor  # zope's interface methods confuse mypy's count of arguments
        trigger = clock.addSystemEventTrigger("before", "shutdown", self.stopping.set)

        def joined_or_not(result: object) -> object:
            if not self.stopping.is_set():  # a fired trigger is gone already (removing it is deprecated)
                clock.removeSystemEventTrigger(trigger)
            return result

        deferred: Deferred[None] = threads.deferToThread(self.join, crawl)
        deferred.addBoth(joined_or_not)
        deferred.addCallbacks(lambda _: self.s.opened(crawl), self._not_joined)
        return deferred

    def prepare(self, spider: Spider) -> str:
        """The spider's policy, the store (not yet connected) and the host gate; returns the crawl id."""
        s = self.s
        s.spider = spider
        s.policy = CrawlPolicy.for_spider(s.crawler.settings, spider)
        crawl = s.config.crawl_id or s.policy.crawl or spider.name
        s.backend = make_backend(s.config, crawl, timeout=OPEN_TIMEOUT_SECONDS)
        s.gate = HostGate(s.crawler, s.policy.limiter(s.config, s.crawler.settings), s.policy.limits, crawl)
        return crawl

    def join(self, crawl: str) -> None:
        """Connect to the store and register this node (blocking: ``open`` runs it off the reactor)."""
        s = self.s
        assert s.backend is not None and s.gate is not None
        backend, gate, config = s.backend, s.gate, s.config

        def register() -> tuple[lifecycle.Joined, Counts]:
            backend.open()
            failpoints.hit("frontier.joining")
            self._obey_crawl_delay(gate)  # first: joining forgets the slots a killed process left
            joined = lifecycle.join(backend, crawl, config.node_id, config.lease_seconds,
                                    s.policy.recrawl.active, lambda node: gate.forget(f"{crawl}:{node}"),
                                    self.stopping)
            return joined, backend.counts()

        joined, counts = lifecycle.when_reachable(backend, register, config.retry_max_seconds,
                                                  config.join_wait_seconds, self.stopping)
        s.node, s.token = joined.node, joined.token
        gate.holder = f"{crawl}:{s.node}"
        logger.info(
            "Frontier %s (%s) for crawl %r, node %s: %d queued, %d leased, %d done, %d failed, "
            "%d seen; %d leases returned to the queue", type(backend).__name__,
            _where(backend), crawl, s.node, counts.queued, counts.leased_total, counts.done,
            counts.failed, counts.seen, joined.reclaimed)
        s.inc("reclaimed", joined.reclaimed)
        backend.limit_wait(config.call_timeout_seconds)  # from here on, calls on the reactor

    def _obey_crawl_delay(self, gate: HostGate) -> None:
        """robots.txt's Crawl-delay caps the rate every node shares (read here, off the reactor)."""
        s = self.s
        try:
            limits = robots_limits(s.policy.limits, s.spider, s.crawler)
        except RobotsUnavailable as exc:
            raise lifecycle.NotJoined(str(exc), "robots_unavailable") from None
        if limits == s.policy.limits:
            return
        s.policy = replace(s.policy, limits=limits)
        gate.limits = limits
        if gate.limiter is None:
            gate.limiter = s.policy.limiter(s.config, s.crawler.settings)

    def _not_joined(self, failure: Failure) -> Failure | None:
        exc = failure.value
        if not isinstance(exc, lifecycle.NotJoined):
            return failure
        stats = self.s.crawler.stats
        if exc.reason != "shutdown":
            logger.error("%s", exc)
            stats.set_value(FATAL_STAT, str(exc) if exc.reason == "robots_unavailable" else f"frontier: {exc}")
        stats.set_value(NOT_JOINED_STAT, exc.reason)  # the store pipeline then opens nothing
        self.close_reason = exc.reason
        return None

    def _spider_opened(self, spider: Spider) -> None:
        if self.close_reason:
            raise CloseSpider(self.close_reason)


def _where(backend: object) -> str:
    return getattr(backend, "path", None) or f"{getattr(backend, 'prefix', '')}:*"
