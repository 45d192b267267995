"""Scrapy's per-page work a node skips without changing what anyone sees.

- ``LeanStats`` (``STATS_CLASS``): Scrapy's in-memory stats collector, without the shim its base
  class puts on every attribute access (it looks up ``_cached_<name>`` and catches the
  AttributeError, to warn about a deprecated ``spider`` argument). Stats are touched several times
  per page, by Scrapy and by the frontier; a ``spider`` argument is accepted and ignored, as Scrapy
  does after its warning.
- ``UnheardDebugRecords`` (an extension): Scrapy logs "Crawled (200)" and "Scraped from" at DEBUG
  for every page and item, and with ``LOG_LEVEL=INFO`` the records are built, formatted into their
  arguments and then dropped by every handler. While a spider is open, the ``scrapy`` and
  ``recordhound`` loggers (and any of their children with a lower level of its own) get the lowest
  level a handler present at that moment would take, when that is above DEBUG; a handler that
  takes DEBUG (``LOG_LEVEL=DEBUG``, a test's capture, one added to a Scrapy logger) leaves them as
  they are, and one present when a later crawler of the same process opens lowers them again. A
  handler added while the spider runs is not looked at: add it before, or set the logger's level
  yourself (a level changed since the raise is left as it is, unless it was changed to the very
  level the raise set). The levels they had are given back when the last open spider of the
  process closes. A second crawler of one process logs its own start-up records (settings,
  components) into the first one's raise until its own spider opens.

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


class Raised:
    """The loggers raised for the crawlers open in this process (one shared record, as loggers are
    shared): the level each had and the level set. A logger whose level changed since (a user's
    ``setLevel``) is left to its new owner."""

    def __init__(self) -> None:
        self.crawlers = 0
        self.levels: dict[logging.Logger, tuple[int, int]] = {}

    def quiet(self, prefix: str) -> None:
        heard = lowest_handled_level(prefix)
        for logger in family(prefix):  # Scrapy's logging config sets `scrapy` to DEBUG; children may set theirs
            if logger in self.levels:  # raised before: kept, lowered, given back, or now the user's
                self.lower(logger, heard)
            elif logger.level < heard and (logger.level or logger.name == prefix):
                self.levels[logger] = logger.level, heard
                logger.setLevel(heard)

    def lower(self, logger: logging.Logger, heard: int = logging.NOTSET) -> None:
        """No higher than ``heard`` (the lowest level a handler takes now; NOTSET: its own level
        again); a logger whose level a user set since is theirs."""
        own, set_here = self.levels[logger]
        if logger.level != set_here:
            del self.levels[logger]
        elif heard <= own:
            del self.levels[logger]
            logger.setLevel(own)
        elif heard < set_here:
            self.levels[logger] = own, heard
            logger.setLevel(heard)

    def give_all_back(self) -> None:
        for logger in list(self.levels):
            self.lower(logger)


RAISED = Raised()


class UnheardDebugRecords:
    def __init__(self) -> None:
        self.opened = False  # a spider that failed to open is closed without spider_opened

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnheardDebugRecords:
        extension = cls()
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        self.opened = True
        RAISED.crawlers += 1
        for prefix in QUIETED:  # with every crawler that opens: its handlers count too
            RAISED.quiet(prefix)

    def spider_closed(self) -> None:
        if not self.opened:
            return
        self.opened = False
        RAISED.crawlers -= 1
        if RAISED.crawlers == 0:
            RAISED.give_all_back()
