"""A recheck the shop does not answer in any of its tries (down, overloaded: refused connections, 503s)
keeps its schedule with its validators, on both backends; before, it became a dead letter, and a stored
page left the recrawl schedule for good (its fingerprint seen: no listing brings it back)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from types import MappingProxyType
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from recordhound import settings as project_settings
from recordhound.frontier.factory import make_backend
from recordhound.frontier.registry import FRONTIER_ID, KIND_META
from recordhound.frontier.retry import Problem
from recordhound.frontier.scheduler import FrontierScheduler
from recordhound.sources.profile import RecrawlSpec
from tests.services import redis_url, unique_prefix

INTERVAL = 0.5  # seconds between two fetches of a product
ATTEMPTS = 2


class RecheckSpider(Spider):
    name = "recheckunanswered"


@pytest.fixture(params=["embedded", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    if request.param == "embedded":
        with tempfile.TemporaryDirectory() as folder:
            yield {"JOBDIR": folder}
    else:
        yield {"RECORDHOUND_REDIS_URL": redis_url(), "RECORDHOUND_REDIS_PREFIX": unique_prefix()}


def _scheduler(store: dict[str, Any]) -> FrontierScheduler:
    values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
    values.update({"TWISTED_REACTOR": None, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "WARNING",
                   "RECORDHOUND_RETRY_BASE_SECONDS": 1e-6, "RECORDHOUND_RETRY_CAP_SECONDS": 1e-6,
                   "RECORDHOUND_RETRY_MAX_ATTEMPTS": ATTEMPTS, **store})
    crawler = get_crawler(RecheckSpider, values)
    crawler.spider = crawler._create_spider()
    crawler.engine = crawler._create_engine()  # not started: the test is the engine's loop
    scheduler = FrontierScheduler.from_crawler(crawler)
    crawl = scheduler.opening.prepare(crawler.spider)
    scheduler.policy = replace(scheduler.policy, recrawl=RecrawlSpec(MappingProxyType({"product": INTERVAL})))
    scheduler.opening.join(crawl)
    scheduler.phase = "open"
    scheduler.engine_signals.clock = Clock()
    return scheduler


def _next(scheduler: FrontierScheduler, seconds: float = 5.0) -> Request:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (request := scheduler.next_request()) is not None:
            return request
        assert scheduler.flush_safely()
        time.sleep(0.05)
    raise AssertionError(f"nothing handed out in {seconds} s: {scheduler.backend.counts()}")


@pytest.mark.parametrize("how", ["refused", "http_503"])
def test_a_recheck_unanswered_in_every_try_keeps_its_schedule_and_validators(store: dict[str, Any],
                                                                           how: str) -> None:
    scheduler = _scheduler(store)
    try:
        assert scheduler.claim_start() == "claimed"
        scheduler.enqueue_request(Request("https://shop.test/p/1", meta={KIND_META: "product"}))
        scheduler.start_finished()
        first = _next(scheduler)
        scheduler.engine_signals._response_received(
            HtmlResponse(first.url, body=b"<html>v1</html>", headers={"ETag": '"v1"'}, request=first), first)
        scheduler.outcomes.output_finished(first.meta[FRONTIER_ID])
        assert scheduler.flush_safely()
        for _ in range(ATTEMPTS):  # the recheck, then its retry: the shop is down
            request = _next(scheduler)
            assert request.headers.get("If-None-Match") == b'"v1"'
            frontier_id = request.meta[FRONTIER_ID]
            if how == "http_503":
                scheduler.outcomes.response_received(frontier_id)
                scheduler.report(frontier_id, Problem("http_503", "HTTP 503", transient=True))
                scheduler.outcomes.output_finished(frontier_id)
            else:
                scheduler.report(frontier_id, Problem("download_failed", "refused", transient=True))
            assert scheduler.flush_safely()
        counts = scheduler.backend.counts()
        assert (counts.failed, counts.scheduled + counts.due, counts.queued) == (0, 1, 0), counts
        assert scheduler.crawler.stats.get_value("recordhound/frontier/recheck_unanswered") == 1
        again = _next(scheduler)  # the next due time: asked again, conditionally
        assert (again.url, again.headers.get("If-None-Match")) == ("https://shop.test/p/1", b'"v1"')
        # kept on the schedule, but a failure for the run's health: 1 of its 2 outcomes (50 % > 25 %)
        from recordhound.extensions.health import CrawlHealthMonitor  # here: pytest would collect the TestCase

        monitor = CrawlHealthMonitor("test_failed_share_is_below_the_threshold")
        monitor.data = SimpleNamespace(stats=scheduler.crawler.stats.get_stats(), crawler=scheduler.crawler)
        with pytest.raises(AssertionError, match="1 of 2 requests failed .* 1 of them rechecks the shop did not"):
            monitor.test_failed_share_is_below_the_threshold()
    finally:
        scheduler.close("shutdown")
        backend = make_backend(scheduler.config, RecheckSpider.name, timeout=5.0)
        backend.open()
        backend.reset()
        backend.close()
