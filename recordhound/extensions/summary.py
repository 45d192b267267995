"""Print what a crawl did when it ends: pages, items, new/changed/unchanged offers, errors."""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING, Any

from scrapy import signals

from recordhound.config import ReportConfig
from recordhound.extensions.whole_close import close_ended
from recordhound.frontier.registry import NOT_JOINED_STAT

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
STORE = "recordhound/store/"


def build_summary(stats: dict[str, Any], reason: str) -> dict[str, Any]:
    errors = {k.rsplit("/", 1)[-1]: v for k, v in stats.items() if k.startswith("recordhound/errors/")}
    elapsed = stats.get("elapsed_time_seconds") or 0.0
    pages = stats.get("response_received_count", 0)
    return {
        "finish_reason": reason,
        "elapsed_seconds": round(elapsed, 2),
        "pages": pages,
        "pages_per_second": round(pages / elapsed, 1) if elapsed else None,
        "items_scraped": stats.get("item_scraped_count", 0),
        "items_dropped": stats.get("item_dropped_count", 0),
        "stored": {k[len(STORE):]: v for k, v in sorted(stats.items()) if k.startswith(STORE)},
        "errors": errors,
        "health": stats.get("recordhound/health/failed") or "ok",
    }


def format_summary(summary: dict[str, Any]) -> str:
    stored = summary["stored"]
    lines = [
        f"recordhound crawl {summary['finish_reason']} in {summary['elapsed_seconds']} s: "
        f"{summary['pages']} pages ({summary['pages_per_second']} pages/s), "
        f"{summary['items_scraped']} items, {summary['items_dropped']} dropped as unusable",
        f"  items:    {stored.get('stored', 0)} stored, {stored.get('parked', 0)} parked for review, "
        f"{stored.get('rejected', 0)} rejected in review",
        f"  releases: {stored.get('releases_new', 0)} new, {stored.get('releases_changed', 0)} changed",
        f"  offers:   {stored.get('offers_new', 0)} new, {stored.get('offers_changed', 0)} changed, "
        f"{stored.get('offers_unchanged', 0)} unchanged, {stored.get('price_changes', 0)} price changes, "
        f"{stored.get('prices_held', 0)} held for review",
        f"  entities: {stored.get('artists_new', 0)} artists, {stored.get('labels_new', 0)} labels, "
        f"{stored.get('styles_new', 0)} styles new (auto-approved)",
        f"  errors:   {sum(summary['errors'].values())}"
        + "".join(f"\n    {kind}: {count}" for kind, count in sorted(summary["errors"].items())),
        f"  health:   {summary.get('health', 'ok')}",
    ]
    return "\n".join(lines)


class CrawlSummary:
    def __init__(self, crawler: Crawler, config: ReportConfig) -> None:
        self.crawler, self.config = crawler, config

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlSummary:
        ext = cls(crawler, ReportConfig.from_settings(crawler.settings))
        # connected late so that core stats (elapsed time, finish reason) are final
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        ext.reason = "unknown"
        return ext

    def spider_closed(self, reason: str) -> None:
        self.reason = reason
        engine = self.crawler.engine
        if engine is not None and engine.start_time is None and self.crawler.stats.get_value(NOT_JOINED_STAT):
            self._report()  # closed before its engine started, so no engine_stopped comes

    async def engine_stopped(self) -> None:
        """After a close under way ends (a stop during it sends engine_stopped first: ``whole_close.py``)."""
        await close_ended(self.crawler)
        self._report()

    def _report(self) -> None:
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        summary = build_summary(stats, self.reason)
        if self.config.print_summary:
            print(format_summary(summary), file=sys.stdout, flush=True)
        if self.config.stats_file:
            with open(self.config.stats_file, "w", encoding="utf-8") as out:
                json.dump({"summary": summary, "stats": stats}, out, default=str, indent=1)
        logger.info("Crawl summary: %s", summary)
