"""The one owner of ``engine.pause()``/``unpause()``: the engine runs only when no reason remains.

The frontier (its store is down) and each store batcher (the product DB is down) pause the crawl
for reasons of their own; one of them recovering must not unpause the crawl while another is
still down. Each names its reason; the engine is paused while any reason is held.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from recordhound.frontier import engine_access

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class EnginePause:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.reasons: set[str] = set()

    def hold(self, reason: str) -> None:
        if reason in self.reasons:
            return
        if not self.reasons and self.crawler.engine is not None:
            self.crawler.engine.pause()
        self.reasons.add(reason)
        logger.debug("Crawl paused: %s", ", ".join(sorted(self.reasons)))

    def release(self, reason: str, quiet: bool = False) -> None:
        """``quiet``: a routine resume (back-pressure, counted in stats), not logged as a recovery."""
        if reason not in self.reasons:
            return
        self.reasons.discard(reason)
        if not self.reasons and self.crawler.engine is not None:
            self.crawler.engine.unpause()
            engine_access.wake(self.crawler)  # now, not at the engine's next 5-second heartbeat
            if not quiet:
                logger.info("%s recovered; crawl resumed", reason)
        elif self.reasons:
            logger.info("%s recovered; the crawl stays paused for: %s", reason, ", ".join(sorted(self.reasons)))

    @property
    def paused(self) -> bool:
        return bool(self.reasons)


_pauses: WeakKeyDictionary[Crawler, EnginePause] = WeakKeyDictionary()


def pauses(crawler: Crawler) -> EnginePause:
    """The crawler's one pause owner."""
    if crawler not in _pauses:
        _pauses[crawler] = EnginePause(crawler)
    return _pauses[crawler]
