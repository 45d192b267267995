"""The catalog spider's errback acts on the frontier's three answers: a retry (counted), a dead
letter (recorded as the crawl's error), or a lease the store took back (neither: the request's
one outcome is the store's to give)."""

from __future__ import annotations

import pytest
import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.project import get_project_settings
from scrapy.utils.test import get_crawler, get_reactor_settings
from twisted.python.failure import Failure

from recordhound.frontier.leasebook import LeaseBook
from recordhound.frontier.outcomes import Outcomes
from recordhound.frontier.registry import FRONTIER_ID, register
from recordhound.frontier.retry import TAKEN_BACK, Problem, Stale
from recordhound.spiders.catalog import CatalogSpider

PROBLEM = Problem("http_503", "HTTP error response", transient=True)


class Answers:
    """The frontier's side of an errback, answering as told (what the scheduler answers is its own test)."""

    def __init__(self, answer: float | Stale | None) -> None:
        self.answer, self.asked = answer, 0
        self.outcomes, self.book = Outcomes(lambda _: None, lambda *_: None), LeaseBook()

    def claim_start(self) -> str:
        return ""

    def start_finished(self) -> None:
        pass

    def report(self, frontier_id: int, problem: Problem) -> float | Stale | None:
        self.asked += 1
        return self.answer


@pytest.mark.parametrize(("answer", "retries", "errors"), [(4.0, 1, 0), (None, 0, 1), (TAKEN_BACK, 0, 0)])
def test_each_answer_is_counted_once_where_it_belongs(answer: float | Stale | None, retries: int, errors: int) -> None:
    settings = {**get_project_settings(), **get_reactor_settings()}  # nothing is downloaded
    crawler = get_crawler(CatalogSpider, settings_dict=settings)
    spider = CatalogSpider.from_crawler(crawler, source="demo")
    crawler.spider = spider
    frontier = Answers(answer)
    register(crawler, frontier)
    spider._failed(scrapy.Request("http://127.0.0.1:1/release/1", meta={FRONTIER_ID: 7}), PROBLEM)
    stats = crawler.stats.get_stats()
    assert frontier.asked == 1
    assert stats.get("recordhound/retry/http_503", 0) == retries
    assert stats.get("recordhound/errors/http_503", 0) == errors


@pytest.mark.parametrize(("answer", "counted"), [(None, 1), (TAKEN_BACK, 0)])
def test_a_page_robots_forbids_is_counted_unless_the_store_took_it_back(answer: float | Stale | None,
                                                                         counted: int) -> None:
    settings = {**get_project_settings(), **get_reactor_settings()}
    crawler = get_crawler(CatalogSpider, settings_dict=settings)
    spider = CatalogSpider.from_crawler(crawler, source="demo")
    crawler.spider = spider
    frontier = Answers(answer)
    register(crawler, frontier)
    failure = Failure(IgnoreRequest("Forbidden by robots.txt"))  # as Scrapy's RobotsTxtMiddleware says
    failure.request = scrapy.Request("http://127.0.0.1:1/private/1", meta={FRONTIER_ID: 8})  # type: ignore[attr-defined]
    spider.on_error(failure)
    stats = crawler.stats.get_stats()
    assert frontier.asked == 1
    assert stats.get("recordhound/robots/forbidden", 0) == counted
    assert not any(key.startswith("recordhound/errors/") for key in stats)
