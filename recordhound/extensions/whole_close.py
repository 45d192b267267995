"""A graceful stop that comes while the crawl is closing already waits for that close to end.

In Scrapy 2.19 a stop (Ctrl-C, SIGTERM, scrapyd's cancel, ``recordhound worker`` stopping its job)
during a close already under way (the crawl finished, a ``CLOSESPIDER_*`` limit, an error) asks the
engine to close the spider again; that second close returns as soon as the engine's slot has closed,
then ``engine_stopped`` is sent and the crawl's task ends: the reactor stopped with the first close
cut short wherever it was (the store's last batch or the crawl's end in the writer, the frontier's
acks and leases written back, the health checks). The process then left without a word, exit 0.
``engine_stopped`` waits for its receivers, so this one holds the stop until the first close is
over (the engine has no spider left); a second signal still stops the reactor at once
(``commands/crawl.py`` then leaves without waiting for what is left).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy import signals

from recordhound.frontier.engine_access import spider_closing

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
LOOK_SECONDS = 0.05  # how often a waiting stop looks whether the close under way has ended


class WholeClose:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WholeClose:
        ext = cls(crawler)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    async def engine_stopped(self) -> None:
        if spider_closing(self.crawler):
            logger.warning("Stopping: the crawl's close under way ends first (it writes what it holds); "
                           "Ctrl-C again to leave at once")
        await close_ended(self.crawler)


async def close_ended(crawler: Crawler) -> None:
    """Returns once the engine's close under way, if any, has ended."""
    while spider_closing(crawler):
        await asyncio.sleep(LOOK_SECONDS)
