"""Store pipeline: upsert releases and offers into the product database in batches.

All of the product database's work is its writer process's (``catalog/worker.py``): opening the
crawl's source (the schema, the source's row, its status), the batches, the 304s, the progress and
the crawl's end. This process never loads SQLAlchemy, with the store on or off (about 0.35 s of a
node's start, docs/benchmarks.md). The crawl does not wait for the source to open: items wait for
it in their batch. A source the writer cannot open stops the crawl (exit 1): the items are dropped
with :class:`ItemNotStored`, and their pages are neither acked nor failed (given back at close).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured

from recordhound import failpoints, signals
from recordhound.backoff import retrying
from recordhound.catalog import worker
from recordhound.catalog.errors import is_transient
from recordhound.catalog.result import BatchResult
from recordhound.config import ReviewConfig, StoreConfig
from recordhound.errors import record_error, stop_crawl
from recordhound.exceptions import reason
from recordhound.extensions.health import HEALTH_STAT
from recordhound.frontier import engine_access, registry
from recordhound.frontier.engine_signals import ItemNotStored
from recordhound.frontier.registry import NOT_JOINED_STAT
from recordhound.items import Release, Unchanged
from recordhound.pause import pauses
from recordhound.pipelines.batcher import Backlog, Batcher
from recordhound.pipelines.writer_process import WriterProcess, adopt_early
from recordhound.preflight import safe_url
from recordhound.text import now_iso

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from recordhound.sources.profile import Profile

logger = logging.getLogger(__name__)
T = TypeVar("T")
PROGRESS_EVERY_SECONDS = 10.0
BACKPRESSURE = "recordhound/backpressure/"  # stats: pauses, paused_seconds, max_waiting_items, max_load
CALL_ATTEMPTS = 5  # tries of the source's opening and of the crawl's end (a writer died, the database blinked)


class StorePipeline:
    def __init__(self, crawler: Crawler, config: StoreConfig, review: ReviewConfig) -> None:
        self.crawler, self.config, self.review = crawler, config, review
        self.trusted = False
        self.counts: Counter[str] = Counter()
        self.recent_errors: deque[dict[str, str]] = deque(maxlen=config.errors_kept)
        self._opening: asyncio.Task[int] | None = None  # the writer opening the crawl's source: its id
        self.source_id = 0
        self.batcher: Batcher[Release, BatchResult] | None = None
        self.unchanged: Batcher[Unchanged, int] | None = None  # pages that answered 304 (a batch: how many)
        self.writer: WriterProcess | None = None
        self._started = self._last_progress = time.monotonic()
        self.paused = PausedTime(crawler.stats, config.max_waiting_items)  # back-pressure's stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        if not crawler.settings.getbool("RECORDHOUND_STORE_ENABLED"):
            raise NotConfigured("RECORDHOUND_STORE_ENABLED is off: items are not stored")
        pipeline = cls(crawler, StoreConfig.from_settings(crawler.settings),
                       ReviewConfig.from_settings(crawler.settings))
        crawler.signals.connect(pipeline._error_recorded, signal=signals.error_recorded)
        crawler.signals.connect(pipeline._spider_closed, signal=scrapy_signals.spider_closed)
        crawler.signals.connect(pipeline._store_eagerly, signal=signals.store_eagerly)
        return pipeline

    def _store_eagerly(self, eager: bool) -> None:
        """A page's outcome waits on its items (a suspect tried alone): write at once meanwhile."""
        for batcher in (self.batcher, self.unchanged):
            if batcher is not None:
                batcher.write_eagerly(eager)

    async def open_spider(self) -> None:
        profile = self.crawler.spider.profile  # type: ignore[union-attr]  # open: the catalog spider, with its profile
        self.trusted = profile.trusted or self.review.trust_new_entities
        early = adopt_early(self.config, self.review, self.trusted)  # `scrapy crawl` started it (commands/crawl.py)
        if self.crawler.stats.get_value(NOT_JOINED_STAT):
            if early is not None:
                early.discard()
            logger.info("This node did not join the crawl: the product store is not opened")
            return  # the crawl closes at once; the source's status is the other nodes'
        self.writer = early or WriterProcess(self.config, self.review, self.trusted)
        if early is None:
            self.writer.start()  # its interpreter starts beside the crawl's first fetches; the crawl does not wait
        self.crawler.signals.send_catch_log(signals.store_opening)  # no suspect is tried until it has opened
        self._opening = asyncio.ensure_future(self._open_source(profile))
        self._opening.add_done_callback(self._opened)
        pause = pauses(self.crawler)
        self.batcher = Batcher(self._write, self.config.batch_size, self.config.flush_seconds,
                               self._written, is_transient, lambda: pause.hold("product store"),
                               lambda: pause.release("product store"),
                               self.config.retry_max_seconds, self._backlog("product store behind"), self._quiet)
        self.batcher.start()
        self.crawler.signals.connect(self.batcher.tell_backlog, signal=scrapy_signals.request_reached_downloader)
        self.unchanged = Batcher(self._touch, self.config.batch_size, self.config.flush_seconds,
                                 self._touched, is_transient, lambda: pause.hold("product store (304s)"),
                                 lambda: pause.release("product store (304s)"),
                                 self.config.retry_max_seconds,
                                 self._backlog("product store behind (304s)", pages=False), self._quiet)
        self.unchanged.start()
        self.crawler.signals.connect(self._downloaded, signal=scrapy_signals.response_received)
        logger.info("Storing items of source %r in %s", profile.name, safe_url(self.config.database_url))

    async def _open_source(self, profile: Profile) -> int:
        """The writer opens the crawl's source (``worker.open_source``)."""
        return await self._call_retrying("open the crawl's source", worker.open_source, profile.name, profile.kind,
                                         profile.base_url, self.config.auto_upgrade, now_iso(), uuid.uuid4().hex)

    async def _call_retrying(self, what: str, function: Callable[..., T], *args: Any) -> T:
        """``function`` in the writer, tried again (with backoff) when the writer died or the database
        was away for a moment, ``CALL_ATTEMPTS`` times in all; then its error."""
        writer = self.writer
        assert writer is not None

        def warn(exc: Exception, attempt: int, delay: float) -> None:
            logger.warning("Could not %s (%s); retry %d in %.1f s", what, reason(exc), attempt, delay)
        return await retrying(lambda: writer.call(function, *args), is_transient, self.config.retry_max_seconds,
                              warn, CALL_ATTEMPTS)

    def _opened(self, opening: asyncio.Task[int]) -> None:
        """A source that could not be opened stops the crawl, whatever it was doing (items or not)."""
        if opening.cancelled():
            return
        if (exc := opening.exception()) is None:
            self.source_id = opening.result()
            self.crawler.signals.send_catch_log(signals.store_opened)
            return
        why = f"product store: {reason(exc)}"
        logger.error("The product database could not be opened for this crawl (%s): stopping; the pages "
                     "fetched meanwhile go back to the queue", why)
        stop_crawl(self.crawler, why, "store_error")

    async def _source(self) -> int:
        """The source's id, once the writer opened it (``_opened`` keeps it)."""
        if not self.source_id:
            assert self._opening is not None
            try:
                return await asyncio.shield(self._opening)
            except Exception as exc:  # noqa: BLE001 - _opened stopped the crawl on it
                raise ItemNotStored("not stored: the product database could not be opened for this crawl",
                                    log_level="DEBUG") from exc  # the crawl's error says it once
        return self.source_id

    def _quiet(self) -> bool:
        """No page's items will join a batch soon, so waiting for the batch time would only delay
        them (a short crawl's end, the last pages of any crawl): nothing is downloading, and no
        request will start soon (this node holds none in hand, or the engine will not ask for one:
        paused, closing, or its scraper full of pages that wait for these very items). A request in
        hand otherwise waits for its host's politeness slot: a crawl held to N requests a second
        keeps its batches (writing each page's items alone cost it 4-16 times the transactions)."""
        return not engine_access.downloading(self.crawler) and (
            not registry.requests_in_hand(self.crawler) or not engine_access.will_ask(self.crawler))

    def _downloaded(self) -> None:
        """A response left the downloader (Scrapy's ``active`` no longer holds it): if it was the last,
        what waits is written now, not at the batch time."""
        if self.batcher is not None and self.unchanged is not None:
            self.batcher.nudge()
            self.unchanged.nudge()

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Unchanged) and self.unchanged is not None:
            await self.unchanged.add(item)
            return item
        if not isinstance(item, Release) or self.batcher is None:
            return item
        await self.batcher.add(item)
        return item

    def _backlog(self, reason: str, pages: bool = True) -> Backlog:
        """Back-pressure: pause the crawl (its own reason) while too many items await the store;
        ``pages``: count the pages on their way to it too (once: the items' batcher does)."""
        pause, paused = pauses(self.crawler), self.paused

        def hold() -> None:
            paused.hold(reason)
            pause.hold(reason)
            failpoints.hit("store.backpressure_paused")

        def release() -> None:
            paused.release(reason)
            pause.release(reason, quiet=True)
        in_flight = (lambda: engine_access.pages_in_progress(self.crawler)) if pages else (lambda: 0)
        concurrency = self.crawler.settings.getint("CONCURRENT_REQUESTS")
        if pages and self.config.max_waiting_items < 2 * concurrency:
            logger.warning("RECORDHOUND_STORE_MAX_WAITING_ITEMS=%d is under twice CONCURRENT_REQUESTS=%d: pages "
                           "in flight alone will pause the crawl, a fast store or not",
                           self.config.max_waiting_items, concurrency)
        return Backlog(self.config.max_waiting_items, hold, release, in_flight)

    def _record_peak(self) -> None:
        """The most items that ever waited for the store, and the most pages or items counted."""
        backlogs = [b.backlog for b in (self.batcher, self.unchanged) if b is not None and b.backlog]
        if backlogs and self.crawler.stats is not None:
            self.crawler.stats.max_value(BACKPRESSURE + "max_waiting_items", max(b.peak for b in backlogs))
            self.crawler.stats.max_value(BACKPRESSURE + "max_load", max(b.peak_load for b in backlogs))

    async def close_spider(self) -> None:
        if self.unchanged is not None:
            await self.unchanged.close()
        if self.batcher is not None:
            await self.batcher.close()
        self._record_peak()  # the writer is closed once it recorded the crawl's end (_spider_closed)

    async def _write(self, items: list[Release]) -> BatchResult:
        assert self.writer is not None
        return await self.writer.write(await self._source(), items)

    async def _touch(self, items: list[Unchanged]) -> int:
        """A 304 writes nothing but the offers' last_seen (at its resolution)."""
        assert self.writer is not None
        await self.writer.call(worker.touch, await self._source(), [item.url for item in items],
                               self.config.last_seen_resolution_seconds)
        failpoints.hit("store.after_touch")
        return len(items)

    def _touched(self, pages: int) -> None:
        self.counts["unchanged_pages"] += pages
        self.crawler.stats.inc_value("recordhound/store/unchanged_pages", pages)

    def _written(self, result: BatchResult) -> None:
        self.counts.update(result.counts)
        self.counts["items"] += result.items
        stats = self.crawler.stats
        assert stats is not None
        for key, value in result.counts.items():
            stats.inc_value(f"recordhound/store/{key}", value)
        stats.inc_value("recordhound/store/items", result.items)
        stats.inc_value("recordhound/store/batches")
        self._record_peak()
        for where, why in result.rejections:
            record_error(self.crawler, "invalid_item", where, why)
        for kind, where, what in result.problems:
            record_error(self.crawler, kind, where, what)
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_EVERY_SECONDS:
            self._last_progress = now
            self._publish_progress(now)
            logger.info(
                "Handled %d items (%.1f items/s): %d stored, %d parked for review, %d rejected; "
                "offers new=%d changed=%d unchanged=%d, price changes=%d (%d held for review)",
                self.counts["items"], self.counts["items"] / (now - self._started),
                self.counts["stored"], self.counts["parked"], self.counts["rejected"],
                self.counts["offers_new"], self.counts["offers_changed"],
                self.counts["offers_unchanged"], self.counts["price_changes"], self.counts["prices_held"])

    def _publish_progress(self, now: float) -> None:
        """The source's metadata says how the crawl is going (the admin's Crawl status page)."""
        if self.writer is None or not self.source_id:
            return
        elapsed = max(now - self._started, 1e-6)
        progress = self._progress(round(self.counts["items"] * 60 / elapsed, 1))
        progress["pages_per_second"] = round(progress["pages"] / elapsed, 2)
        task = asyncio.ensure_future(self.writer.call(
            worker.record_progress, self.source_id, {"progress": progress}, progress))
        task.add_done_callback(_log_failure)

    def _progress(self, items_per_minute: float | None) -> dict[str, Any]:
        pages = self.crawler.stats.get_value("response_received_count", 0) if self.crawler.stats else 0
        return {"items": self.counts["items"], "stored": self.counts["stored"], "parked": self.counts["parked"],
                "pages": pages, "at": now_iso(), "items_per_minute": items_per_minute, "pages_per_second": None}

    def _error_recorded(self, kind: str, url: str, message: str) -> None:
        self.recent_errors.append({"kind": kind, "url": url, "message": message, "at": now_iso()})

    async def _spider_closed(self, reason: str) -> None:
        """Awaited by the engine (an async signal handler): the writer records the crawl's end, then
        is closed. Spidermon's checks ran first (an extension's handler)."""
        writer = self.writer
        if writer is None:
            return
        try:
            await self._record_end(reason)
        finally:
            await writer.close()

    async def _record_end(self, finish_reason: str) -> None:
        assert self._opening is not None
        if not self._opening.done():
            logger.info("Waiting for the store's writer to open the source, to record the crawl's end")
        try:
            source_id = await asyncio.shield(self._opening)
        except Exception:  # noqa: BLE001 - the crawl stopped on it (_opened)
            return
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        errors = {k.rsplit("/", 1)[-1]: v for k, v in stats.items() if k.startswith("recordhound/errors/")}
        unhealthy = stats.get(HEALTH_STAT)
        status = "failed" if unhealthy else "completed" if finish_reason == "finished" else "interrupted"
        progress = self._progress(None)
        changes = {"status": status, "parsed_at": now_iso(), "finish_reason": finish_reason,
                   "error_message": f"crawl health: {unhealthy}" if unhealthy else None,
                   "counts": dict(self.counts), "errors": errors, "recent_errors": list(self.recent_errors),
                   "progress": progress}
        try:
            await self._call_retrying("record the crawl's end", worker.record_progress, source_id, changes, progress,
                                      True, unhealthy or None, uuid.uuid4().hex)
        except Exception as exc:  # noqa: BLE001 - the crawl is over; its end goes unrecorded, and says so
            logger.warning("Could not record the crawl's end in the product database: %s", reason(exc))


class PausedTime:
    """Back-pressure's stats: ``pauses``, how often the crawl was paused because the store was behind,
    and ``paused_seconds``, for how long in all. The items' and the 304s' backlogs hold for reasons
    of their own, at times both at once: the crawl is paused while either holds, and counted once."""

    def __init__(self, stats: StatsCollector, max_waiting_items: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stats, self.max_waiting_items, self.clock = stats, max_waiting_items, clock
        self.holding: set[str] = set()
        self.since = self.total = 0.0

    def hold(self, reason: str) -> None:
        if not self.holding:
            self.since = self.clock()
            self.stats.inc_value(BACKPRESSURE + "pauses")
            if self.stats.get_value(BACKPRESSURE + "pauses") == 1:
                logger.info("%d items or pages wait for the product DB: crawl paused until half of them are stored "
                            "(RECORDHOUND_STORE_MAX_WAITING_ITEMS; counted in %spauses)",
                            self.max_waiting_items, BACKPRESSURE)
        self.holding.add(reason)

    def release(self, reason: str) -> None:
        if reason not in self.holding:
            return
        self.holding.discard(reason)
        if not self.holding:
            self.total += self.clock() - self.since
            self.stats.set_value(BACKPRESSURE + "paused_seconds", round(self.total, 1))


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.warning("Could not record the crawl's progress: %s", reason(task.exception()))  # type: ignore[arg-type]
