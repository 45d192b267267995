"""Prometheus metrics read from the shared state: every crawl's frontier, the sources' progress,
the review queue and (with Redis) the per-host politeness slots.

Served by the admin at ``/metrics`` and by ``recordhound metrics --port 9410``. Nothing is kept
in a process: each scrape reads the state, so any one exporter sees every node of every crawl.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from sqlalchemy import select

from recordhound.db.models import Source
from recordhound.frontier.status import known_crawls, status

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from recordhound.config import FrontierConfig
    from recordhound.review.queue import ReviewQueue

logger = logging.getLogger(__name__)


class RecordhoundCollector(Collector):
    def __init__(self, frontier: FrontierConfig, engine: Engine, queue: ReviewQueue) -> None:
        self.frontier, self.engine, self.queue = frontier, engine, queue

    def collect(self) -> Iterator[Metric]:
        yield from self._frontier()
        yield from self._sources()
        yield from self._review()
        yield from self._hosts()

    def _frontier(self) -> Iterator[Metric]:
        gauges = {name: GaugeMetricFamily(f"recordhound_frontier_{name}", text, labels=["crawl"]) for name, text in (
            ("queued", "Requests queued (waiting retries included)"),
            ("due", "Queued requests that may be leased now"),
            ("waiting_retry", "Queued requests waiting out a retry backoff"),
            ("seen", "Fingerprints in the crawl's seen-set"),
            ("scheduled", "Done requests kept for a recheck, not due yet"),
            ("due_within_hour", "Scheduled rechecks due in the next hour"))}
        leased = GaugeMetricFamily("recordhound_frontier_leased", "Requests leased, by node", labels=["crawl", "node"])
        done = CounterMetricFamily("recordhound_frontier_done", "Requests done (acked)", labels=["crawl"])
        failed = GaugeMetricFamily("recordhound_frontier_failed", "Dead letters, by reason", labels=["crawl", "reason"])
        up = GaugeMetricFamily("recordhound_frontier_up", "1 when the frontier could be read", labels=["backend"])
        try:
            reports = [status(self.frontier, crawl) for crawl in known_crawls(self.frontier)]
        except Exception as exc:  # noqa: BLE001 - an unreachable frontier is a metric, not a failed scrape
            logger.warning("metrics: cannot read the frontier: %s", exc)
            reports = []
            up.add_metric([self.frontier.backend], 0)
        else:
            up.add_metric([self.frontier.backend], 1)
        for report in reports:
            crawl = report["crawl"]
            gauges["queued"].add_metric([crawl], report["queued"])
            gauges["due"].add_metric([crawl], report["queued"] - report["waiting_for_retry"])
            gauges["waiting_retry"].add_metric([crawl], report["waiting_for_retry"])
            gauges["seen"].add_metric([crawl], report["seen"])
            gauges["scheduled"].add_metric([crawl], report["scheduled"])
            gauges["due_within_hour"].add_metric([crawl], report["due_within_hour"])
            for node, count in report["leased_by_node"].items():
                leased.add_metric([crawl, node], count)
            done.add_metric([crawl], report["done"])
            for reason, count in report["failed_by_reason"].items():
                failed.add_metric([crawl, reason], count)
        yield from (*gauges.values(), leased, done, failed, up)

    def _sources(self) -> Iterator[Metric]:
        items = CounterMetricFamily("recordhound_items", "Items of the source's last crawl, by outcome",
                                    labels=["source", "outcome"])
        pages = GaugeMetricFamily("recordhound_pages_per_second", "Pages per second of the source's crawl",
                                  labels=["source"])
        healthy = GaugeMetricFamily("recordhound_source_failed", "1 when the source's last crawl failed",
                                    labels=["source"])
        with self.engine.connect() as conn:
            sources: list[tuple[str, dict[str, Any] | None]] = [
                (row.name, row.meta) for row in conn.execute(select(Source.name, Source.meta.label("meta")))]
        for name, stored in sources:
            meta: dict[str, Any] = stored or {}
            progress: dict[str, Any] = meta.get("progress") or {}
            for outcome in ("stored", "parked"):
                items.add_metric([name, outcome], progress.get(outcome) or 0)
            pages.add_metric([name], progress.get("pages_per_second") or 0)
            healthy.add_metric([name], 1 if meta.get("status") == "failed" else 0)
        yield from (items, pages, healthy)

    def _review(self) -> Iterator[Metric]:
        backlog = GaugeMetricFamily("recordhound_review_backlog", "Review queue entries, by queue",
                                    labels=["queue"])
        for queue, count in self.queue.counts().items():
            backlog.add_metric([queue], count)
        yield backlog

    def _hosts(self) -> Iterator[Metric]:
        in_flight = GaugeMetricFamily("recordhound_host_in_flight", "Requests in flight to a host, all nodes",
                                      labels=["host"])
        rate = GaugeMetricFamily("recordhound_host_rate", "A host's current (adaptive) requests per second",
                                 labels=["host"])
        if self.frontier.redis_url:
            from recordhound.frontier.politeness_redis import RedisLimiter
            from recordhound.redis_client import connect

            limiter = RedisLimiter(connect(self.frontier.redis_url, socket_timeout=5),
                                   self.frontier.redis_prefix, slot_ttl=0)
            try:
                for host, (slots, current) in limiter.hosts().items():
                    in_flight.add_metric([host], slots)
                    rate.add_metric([host], current)
            finally:
                limiter.close()
        yield from (in_flight, rate)


def registry(frontier: FrontierConfig, engine: Engine, queue: ReviewQueue) -> CollectorRegistry:
    found = CollectorRegistry(auto_describe=False)
    found.register(RecordhoundCollector(frontier, engine, queue))
    return found
