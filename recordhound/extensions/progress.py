"""A progress line on stderr while a crawl runs: pages, pages/s, items (``recordhound demo``).

Off unless ``RECORDHOUND_PROGRESS_SECONDS`` is above 0. On a terminal the line is redrawn in
place, as a bar of pages fetched against pages known so far (this process's enqueued count: the
bar can step back while listings reveal pages); elsewhere (a pipe, a log file) a plain line is
written at most every 5 seconds, so a captured run stays short. The last line is written when
the spider closes.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet.task import LoopingCall

from recordhound.config import non_negative_float

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

BAR_WIDTH = 24
PLAIN_MIN_SECONDS = 5.0
CLEAR_TO_END = "\x1b[K"  # a shorter line leaves nothing of the last one behind


def progress_line(pages: int, known: int, items: int, seconds: float, tty: bool) -> str:
    rate = pages / seconds if seconds > 0 else 0.0
    figures = f"{pages} pages  {rate:.0f} pages/s  {items} items"
    if not tty:
        return f"progress: {figures}"
    done = min(pages / known, 1.0) if known else 0.0
    filled = int(done * BAR_WIDTH)
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {figures}"


class CrawlProgress:
    def __init__(self, stats: StatsCollector, interval: float, out: TextIO) -> None:
        self.stats, self.out = stats, out
        self.tty = out.isatty()
        self.interval = interval if self.tty else max(interval, PLAIN_MIN_SECONDS)
        self.started = time.monotonic()
        self.loop: LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlProgress:
        interval = non_negative_float(crawler.settings, "RECORDHOUND_PROGRESS_SECONDS")
        if not interval:
            raise NotConfigured  # off by default: `scrapy crawl` keeps Scrapy's log only
        assert crawler.stats is not None
        progress = cls(crawler.stats, interval, sys.stderr)
        crawler.signals.connect(progress.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(progress.spider_closed, signal=signals.spider_closed)
        return progress

    def spider_opened(self) -> None:
        self.started = time.monotonic()
        self.loop = LoopingCall(self.show)
        self.loop.start(self.interval, now=False)

    def spider_closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.show(final=True)

    def show(self, final: bool = False) -> None:
        pages = int(self.stats.get_value("response_received_count", 0))
        known = int(self.stats.get_value("scheduler/enqueued", 0))
        items = int(self.stats.get_value("item_scraped_count", 0))
        line = progress_line(pages, max(known, pages), items, time.monotonic() - self.started, self.tty)
        if self.tty:
            self.out.write("\r" + line + CLEAR_TO_END + ("\n" if final else ""))
        elif not final or pages:
            self.out.write(line + "\n")
        self.out.flush()
