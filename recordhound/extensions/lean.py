"""Scrapy's per-page work a node skips without changing what anyone sees.

- ``LeanStats`` (``STATS_CLASS``): Scrapy's in-memory stats collector, without the shim its base
  class puts on every attribute access (it looks up ``_cached_<name>`` and catches the
  AttributeError, to warn about a deprecated ``spider`` argument). Stats are touched several times
  per page, by Scrapy and by the frontier; a ``spider`` argument is accepted and ignored, as Scrapy
  does after its warning.
- ``UnheardDebugRecords`` (an extension): Scrapy logs "Crawled (200)" and "Scraped from" at DEBUG
  for every page and item, and with ``LOG_LEVEL=INFO`` the records are built, formatted into their
  arguments and then dropped by every handler. While the spider is open, the ``scrapy`` and
  ``recordhound`` loggers (and any of their children with a lower level of its own) get the lowest
  level any handler would take, when that is above DEBUG; a handler that takes DEBUG
  (``LOG_LEVEL=DEBUG``, a test's capture, one added to a Scrapy logger) leaves them as they are.
  The levels they had are given back when the spider closes.

Measured in docs/benchmarks.md ("Third pass").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.statscollectors import MemoryStatsCollector

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

QUIETED = ("scrapy", "recordhound")


class LeanStats(MemoryStatsCollector):
    __getattribute__ = object.__getattribute__  # CPython then uses its C lookup: no Python call per access


def family(prefix: str) -> list[logging.Logger]:
    """The ``prefix`` logger and those of its children that exist."""
    return [logging.getLogger(prefix), *(logger for name, logger in list(logging.root.manager.loggerDict.items())
                                         if isinstance(logger, logging.Logger) and name.startswith(prefix + "."))]


def lowest_handled_level(prefix: str) -> int:
    """The lowest level a handler of ``prefix``, its children or the root would emit (0: any)."""
    levels = [handler.level for logger in (logging.root, *family(prefix)) for handler in logger.handlers]
    return min(levels) if levels else logging.WARNING  # none at all: Python's last-resort handler


class UnheardDebugRecords:
    def __init__(self) -> None:
        self.raised: list[tuple[logging.Logger, int]] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnheardDebugRecords:
        extension = cls()
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        for prefix in QUIETED:
            heard = lowest_handled_level(prefix)
            if heard <= logging.DEBUG:
                continue
            for logger in family(prefix):  # Scrapy's logging config sets `scrapy` to DEBUG; children may set theirs
                if logger.level < heard and (logger.level or logger.name == prefix):
                    self.raised.append((logger, logger.level))
                    logger.setLevel(heard)

    def spider_closed(self) -> None:
        for logger, level in reversed(self.raised):
            logger.setLevel(level)
        self.raised.clear()
