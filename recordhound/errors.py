"""Record one problem of a crawl: counted in stats, logged once per kind, sent as a signal."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from recordhound import signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
FATAL_STAT = "recordhound/fatal"  # set by a component that ends the crawl on an error it cannot fix (exit 1)


def stop_crawl(crawler: Crawler, why: str, finish_reason: str) -> None:
    """End the crawl on an error no retry fixes: ``why`` is what ``scrapy crawl`` says on its way out
    (exit 1), ``finish_reason`` the spider's close reason. What the engine holds is given back as in
    any graceful stop."""
    crawler.stats.set_value(FATAL_STAT, why)
    if crawler.engine is not None:
        from scrapy.utils.defer import deferred_from_coro

        deferred_from_coro(crawler.engine.close_spider_async(reason=finish_reason))


def record_error(crawler: Crawler, kind: str, url: str, message: str) -> None:
    """Count and announce a problem; the first of each kind is logged as a warning, the rest at debug."""
    assert crawler.stats is not None
    key = f"recordhound/errors/{kind}"
    first = not crawler.stats.get_value(key)
    crawler.stats.inc_value(key)
    crawler.stats.inc_value("recordhound/errors")
    logger.log(logging.WARNING if first else logging.DEBUG, "%s at %s: %s", kind, url, message)
    crawler.signals.send_catch_log(signals.error_recorded, kind=kind, url=url, message=message)
