"""What a node trims of Scrapy's per-page work: the stats collector's per-access shim and the DEBUG
records ("Crawled (200)", "Scraped from") that no log handler takes. Both must leave what a user
sees unchanged: the same stats, every record a handler does take."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Spider, signals
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.misc import load_object
from scrapy.utils.project import get_project_settings
from scrapy.utils.test import get_crawler

from recordhound.extensions.lean import QUIETED

HOT_LOGGERS = ("scrapy.core.engine", "scrapy.core.scraper")


def project_stats() -> Any:
    settings = get_project_settings()
    crawler = get_crawler(Spider, settings_dict={"STATS_CLASS": settings["STATS_CLASS"]})
    return crawler.stats, get_crawler(Spider).stats


OPS = st.lists(st.one_of(
    st.tuples(st.just("inc_value"), st.sampled_from("abc"), st.integers(-3, 3)),
    st.tuples(st.just("max_value"), st.sampled_from("abc"), st.integers(-9, 9)),
    st.tuples(st.just("min_value"), st.sampled_from("abc"), st.integers(-9, 9)),
    st.tuples(st.just("set_value"), st.sampled_from("abc"), st.integers(-9, 9)),
    st.tuples(st.just("clear_stats"), st.none(), st.none()),
), max_size=30)


@given(OPS)
def test_the_project_stats_keep_scrapys_values(ops: list[tuple[str, str | None, int | None]]) -> None:
    ours, scrapys = project_stats()
    assert isinstance(ours, MemoryStatsCollector)
    for name, key, value in ops:
        for stats in (ours, scrapys):
            getattr(stats, name)(*(() if key is None else (key, value)))
        assert ours.get_stats() == scrapys.get_stats()
        assert ours.get_value("a", "none") == scrapys.get_value("a", "none")


def exceptions_raised(call: Any) -> list[str]:
    """Names of the exceptions raised (and caught) inside ``call``, traced frame by frame."""
    raised: list[str] = []

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "exception":
            raised.append(arg[0].__name__)
        return trace

    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(None)
    return raised


def test_a_stats_call_raises_nothing_on_the_way() -> None:
    """Scrapy's collector looks up a ``_cached_<name>`` attribute on every access and catches the
    AttributeError (its spider-argument deprecation shim): several per page."""
    ours, scrapys = project_stats()
    assert "AttributeError" in exceptions_raised(lambda: scrapys.inc_value("pages"))  # what is trimmed
    assert exceptions_raised(lambda: ours.inc_value("pages")) == []
    assert exceptions_raised(lambda: ours.max_value("depth", 3)) == []
    assert ours.get_stats() == {"pages": 1, "depth": 3}


@contextmanager
def opened(handler_level: int) -> Iterator[Any]:
    """A crawler with the project's extensions, a root handler at ``handler_level``, spider opened
    (and closed on the way out, whatever the test asserted)."""
    handler = logging.NullHandler(handler_level)
    logging.root.addHandler(handler)
    name = "recordhound.extensions.lean.UnheardDebugRecords"
    assert name in get_project_settings()["EXTENSIONS"]
    crawler = get_crawler(Spider, settings_dict={"LOG_LEVEL": logging.getLevelName(handler_level)})
    crawler.spider = crawler._create_spider("lean")
    extension = load_object(name).from_crawler(crawler)
    try:
        crawler.signals.send_catch_log(signals.spider_opened, spider=crawler.spider)
        yield extension
    finally:
        crawler.signals.send_catch_log(signals.spider_closed, spider=crawler.spider, reason="finished")
        logging.root.removeHandler(handler)


@pytest.fixture
def as_scrapy_crawl() -> Iterator[tuple[int, int]]:
    """Logging as `scrapy crawl` leaves it: the root passes everything (handlers filter), Scrapy's
    config sets ``scrapy`` to DEBUG; pytest's capture handlers held to WARNING. Yields the levels
    ``scrapy`` and ``recordhound`` have before any spider opens; all is put back after."""
    quieted = [logging.getLogger(name) for name in QUIETED]
    before = [(logger, logger.level) for logger in (logging.root, *quieted)]
    handlers = [(h, h.level) for h in logging.root.handlers]
    logging.root.setLevel(logging.NOTSET)
    quieted[0].setLevel(logging.DEBUG)
    for h in logging.root.handlers:
        h.setLevel(logging.WARNING)
    try:
        yield quieted[0].level, quieted[1].level
    finally:
        for h, level in handlers:
            h.setLevel(level)
        for logger, level in before:
            logger.setLevel(level)


def enabled(name: str) -> bool:
    return logging.getLogger(name).isEnabledFor(logging.DEBUG)


def levels() -> tuple[int, int]:
    return logging.getLogger(QUIETED[0]).level, logging.getLogger(QUIETED[1]).level


def test_debug_records_no_handler_takes_are_not_made(as_scrapy_crawl: tuple[int, int]) -> None:
    with opened(logging.INFO):
        assert not any(enabled(name) for name in HOT_LOGGERS + ("recordhound.frontier",))
        assert logging.getLogger("scrapy.core.engine").isEnabledFor(logging.INFO)
    assert all(enabled(name) for name in HOT_LOGGERS), "the levels are given back at close"
    assert levels() == as_scrapy_crawl


def test_a_handler_that_takes_debug_still_gets_every_record(as_scrapy_crawl: tuple[int, int]) -> None:
    with opened(logging.DEBUG):
        assert all(enabled(name) for name in HOT_LOGGERS)
    child = logging.getLogger("scrapy.core.engine")
    own = logging.NullHandler(logging.DEBUG)
    child.addHandler(own)  # a handler on one Scrapy logger counts too
    try:
        with opened(logging.INFO):
            assert enabled("scrapy.core.engine")
    finally:
        child.removeHandler(own)


def test_a_second_crawler_of_the_process_with_a_debug_handler_gets_every_record(
        as_scrapy_crawl: tuple[int, int]) -> None:
    with opened(logging.INFO):
        assert not enabled("scrapy.core.engine")
        with opened(logging.DEBUG):
            assert all(enabled(name) for name in HOT_LOGGERS + ("recordhound.frontier",))
        with opened(logging.INFO):  # one more, when no handler takes DEBUG again: quiet again
            pass
        assert not enabled("scrapy.core.engine")
    assert levels() == as_scrapy_crawl, "given back when the last crawler closes"
    with opened(logging.DEBUG), opened(logging.INFO):  # the other order: nothing raised at all
        assert all(enabled(name) for name in HOT_LOGGERS)
    assert levels() == as_scrapy_crawl


def test_a_level_set_while_the_spider_runs_is_kept(as_scrapy_crawl: tuple[int, int]) -> None:
    with opened(logging.INFO):
        logging.getLogger("scrapy").setLevel(logging.ERROR)  # a user's choice, mid-crawl
    assert levels() == (logging.ERROR, as_scrapy_crawl[1])


def test_a_spider_that_never_opened_does_not_end_another_crawlers_raise(as_scrapy_crawl: tuple[int, int]) -> None:
    """Scrapy sends spider_closed when opening failed (a pipeline's open_spider raised) without
    spider_opened: that close must not count, or the next crawl's raise is never given back."""
    crawler = get_crawler(Spider, settings_dict={"LOG_LEVEL": "INFO"})
    crawler.spider = crawler._create_spider("failed")
    extension = load_object("recordhound.extensions.lean.UnheardDebugRecords").from_crawler(crawler)
    crawler.signals.send_catch_log(signals.spider_closed, spider=crawler.spider, reason="shutdown")
    assert extension is not None  # held: the signals keep weak references to its methods
    with opened(logging.INFO):
        assert not enabled("scrapy.core.engine")
    assert levels() == as_scrapy_crawl


def test_a_level_a_user_set_is_not_raised_by_the_next_crawler(as_scrapy_crawl: tuple[int, int]) -> None:
    with opened(logging.INFO):
        logging.getLogger("scrapy").setLevel(logging.DEBUG)  # the user wants DEBUG records, mid-crawl
        with opened(logging.INFO):
            assert logging.getLogger("scrapy").level == logging.DEBUG
