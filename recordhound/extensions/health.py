"""Crawl health: Spidermon monitors that say when a finished crawl has in fact failed.

A crawl of a shop that is down fetches nothing, dead-letters its start requests and "finishes";
one whose selectors broke fetches every page and stores nothing. When the spider closes,
Spidermon runs :class:`CrawlHealthMonitor`; a failed check is put in the stats
(``recordhound/health/failed``), from where the store pipeline marks the source ``failed`` with
the reason in ``error_message``, the summary prints it, and ``scrapy crawl`` exits 1.

The failed-share threshold is ``RECORDHOUND_HEALTH_MAX_FAILED_SHARE``, or a profile's
``health: {max_failed_share: 0.1}``. A run that decided fewer than ``SHORT_RUN`` requests (a resumed
crawl's last pages) is judged with the crawl's earlier runs: the frontier's done and failed counts at
its close.
"""

from __future__ import annotations

import logging
from typing import Any

from spidermon import Monitor, MonitorSuite, monitors
from spidermon.core.actions import Action

HEALTH_STAT = "recordhound/health/failed"  # "; "-joined reasons of the checks that failed
PRODUCT_PAGES_STAT = "recordhound/pages/product"  # product pages answered (200 or a recheck's 304)
FRONTIER = "recordhound/frontier/"
ROBOTS_FORBIDDEN_STAT = "recordhound/robots/forbidden"  # requests robots.txt forbids (the frontier records them failed)
SHORT_RUN = 20  # a run that decided fewer requests has its failed share judged over the whole crawl


@monitors.name("crawl health")
class CrawlHealthMonitor(Monitor):
    def _stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.data.stats
        return stats

    @monitors.name("pages fetched")
    def test_pages_were_fetched(self) -> None:
        """The shop answered none of the requests this run leased. A redirect is an answer: a node whose only
        lease redirected to a page another node had done (dropped as seen) reaches no ``response_received``
        (CI met it: the second of two nodes exited 1, "fetched no page")."""
        stats = self._stats()
        leased = stats.get(FRONTIER + "leased", 0)
        if leased and not stats.get("response_received_count", 0) and not stats.get("downloader/response_count", 0):
            reasons = ", ".join(f"{k.rsplit('/', 1)[-1]} {v}" for k, v in sorted(stats.items())
                                if k.startswith("recordhound/errors/"))
            self.fail(f"fetched no page: {leased} leases, none answered ({reasons or 'no errors recorded'})")

    @monitors.name("items stored")
    def test_items_were_stored(self) -> None:
        stats = self._stats()
        pages = stats.get(PRODUCT_PAGES_STAT, 0)
        if not pages:
            return
        if self.data.crawler.settings.getbool("RECORDHOUND_STORE_ENABLED"):
            kept = (stats.get("recordhound/store/stored", 0) + stats.get("recordhound/store/parked", 0)
                    + stats.get("recordhound/store/unchanged_pages", 0))  # 304s: seen again, nothing to store
        else:
            kept = stats.get("item_scraped_count", 0)
        if not kept:
            self.fail(f"stored and parked no item from {pages} product pages (do the profile's selectors still match?)")

    @monitors.name("failed share")
    def test_failed_share_is_below_the_threshold(self) -> None:
        stats = self._stats()
        failed, acked, what = stats.get(FRONTIER + "failed", 0), stats.get(FRONTIER + "acked", 0), "requests"
        failed = max(0, failed - stats.get(ROBOTS_FORBIDDEN_STAT, 0))  # recorded as failed: the shop's wish, no error
        unanswered = stats.get(FRONTIER + "recheck_unanswered", 0)  # kept on the schedule (written as acked),
        failed, acked = failed + unanswered, max(0, acked - unanswered)  # but the shop did not answer them
        if failed and failed + acked < SHORT_RUN and stats.get(FRONTIER + "crawl_failed") is not None:
            # a short run (a resumed crawl's last pages): judged with the crawl's earlier runs, so that one
            # page the shop always fails is not a third of the work (the frontier's counts at its close)
            failed, acked = stats[FRONTIER + "crawl_failed"], stats[FRONTIER + "crawl_done"]
            what = "requests of the crawl (all its runs)"
        limit = max_failed_share(self.data.crawler)
        if failed and failed / (failed + acked) > limit:
            also = f", {unanswered} of them rechecks the shop did not answer (kept on the schedule)" if unanswered else ""
            self.fail(f"{failed} of {failed + acked} {what} failed ({failed / (failed + acked):.0%}, "
                      f"more than {limit:.0%}{also}): see `recordhound frontier failed`")


class RecordHealth(Action):
    """Put the failed checks' reasons in the stats for the store pipeline, summary and exit code."""

    def run_action(self) -> None:
        reasons = [f"{r.item.name.rsplit('/', 1)[-1]}: {r.reason}" for r in self.result.monitors_failed_results]
        self.data.crawler.stats.set_value(HEALTH_STAT, "; ".join(reasons))


class SpidermonToDebug(logging.Filter):
    """Spidermon reports every run at INFO and a failed check with its traceback at ERROR, through
    the spider's logger; recordhound says it in one line (summary, stderr), so those go to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("[Spidermon]"):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


class CrawlHealth(MonitorSuite):
    monitors = [CrawlHealthMonitor]
    monitors_failed_actions = [RecordHealth]


def max_failed_share(crawler: Any) -> float:
    """The profile's ``health.max_failed_share``, else RECORDHOUND_HEALTH_MAX_FAILED_SHARE."""
    profile = getattr(crawler.spider, "profile", None)
    share = profile.health.max_failed_share if profile is not None else None
    return float(share) if share is not None else crawler.settings.getfloat("RECORDHOUND_HEALTH_MAX_FAILED_SHARE")
