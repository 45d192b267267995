"""A Scrapy extension for the crawl benches: appends "<unix time> <responses received> <Python's
allocated blocks>" to a file every second (``BENCH_PROGRESS_FILE``; off when empty), so a bench can
tell pages/s per slice of a crawl without asking the shop or parsing logs, and whether a crawler's
growing RSS is objects kept (the blocks grow too) or the allocator's high-water mark (they do not).
Loaded into stock and recordhound crawls alike."""

from __future__ import annotations

import sys
import time
from typing import IO

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task


class BenchProgress:
    def __init__(self, crawler: Crawler, path: str, interval_seconds: float) -> None:
        self.crawler, self.path, self.interval_seconds = crawler, path, interval_seconds
        self._file: IO[str] | None = None
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BenchProgress:
        path = crawler.settings.get("BENCH_PROGRESS_FILE", "")
        if not path:
            raise NotConfigured
        extension = cls(crawler, path, crawler.settings.getfloat("BENCH_PROGRESS_SECONDS", 1.0))
        crawler.signals.connect(extension.opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.closed, signal=signals.spider_closed)
        return extension

    def opened(self) -> None:
        self._file = open(self.path, "a", buffering=1)
        self._loop = task.LoopingCall(self.write)
        self._loop.start(self.interval_seconds, now=True)

    def write(self) -> None:
        assert self._file is not None and self.crawler.stats is not None
        pages = self.crawler.stats.get_value("response_received_count", 0)
        self._file.write(f"{time.time():.3f} {pages} {sys.getallocatedblocks()}\n")

    def closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._file is not None:
            self.write()
            self._file.close()
