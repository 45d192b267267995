"""The store pipeline's back-pressure stats: ``recordhound/backpressure/pauses`` and ``paused_seconds``
count the time the crawl was paused because the product store was behind, whichever backlog held
it (the items', the 304s') and however the pause ended (the store caught up, or the spider closed)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from recordhound.catalog.result import BatchResult
from recordhound.config import ReviewConfig, StoreConfig
from recordhound.items import Release
from recordhound.pipelines.batcher import Backlog, Batcher
from recordhound.pipelines.store import BACKPRESSURE, PausedTime, StorePipeline

MAX_WAITING = 4
HELD_SECONDS = 0.3  # a pause's real length: the stats are rounded to 0.1 s


class Engine:
    """The engine's pause switch: all the pause owner touches of it (a real engine needs a crawl)."""

    def __init__(self) -> None:
        self.paused = False

    def pause(self) -> None:
        self.paused = True

    def unpause(self) -> None:
        self.paused = False


def _store() -> StorePipeline:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    settings.setdict({"RECORDHOUND_DATABASE_URL": "sqlite://", "RECORDHOUND_STORE_MAX_WAITING_ITEMS": MAX_WAITING})
    crawler = get_crawler()
    crawler.engine = Engine()  # type: ignore[assignment]
    return StorePipeline(crawler, StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings))


def _batcher(backlog: Backlog) -> Batcher[Release, BatchResult]:
    async def write(items: list[Release]) -> BatchResult:
        raise AssertionError("nothing waits: nothing is written")
    return Batcher(write, 2, 60.0, lambda _: None, lambda exc: False, lambda: None, lambda: None, 1.0, backlog)


def _stat(store: StorePipeline, name: str) -> Any:
    assert store.crawler.stats is not None
    return store.crawler.stats.get_value(BACKPRESSURE + name)


def test_a_pause_still_held_when_the_spider_closes_counts_in_paused_seconds() -> None:
    store = _store()

    async def run() -> None:
        store.batcher = batcher = _batcher(store._backlog("product store behind"))
        batcher.start()
        assert batcher.backlog is not None
        batcher.backlog.update(MAX_WAITING)  # as many items or pages in flight as the bound: paused
        assert store.crawler.engine.paused
        await asyncio.sleep(HELD_SECONDS)
        await store.close_spider()  # nothing waits: no write, no count again

    asyncio.run(run())
    assert _stat(store, "pauses") == 1
    assert (_stat(store, "paused_seconds") or 0) >= HELD_SECONDS
    assert not store.crawler.engine.paused


def test_the_items_and_the_304s_pauses_add_up_and_count_once_when_both_hold() -> None:
    store = _store()
    items, unchanged = store._backlog("product store behind"), store._backlog("(304s)", pages=False)

    async def run() -> None:
        for backlog in (items, unchanged):  # one pause after the other: both count
            backlog.update(MAX_WAITING)
            await asyncio.sleep(HELD_SECONDS)
            backlog.update(0)
        assert _stat(store, "pauses") == 2
        before = _stat(store, "paused_seconds")
        assert before >= 2 * HELD_SECONDS
        started = time.monotonic()
        items.update(MAX_WAITING)  # both at once: one pause of the crawl, its time counted once
        unchanged.update(MAX_WAITING)
        await asyncio.sleep(HELD_SECONDS)
        items.update(0)
        unchanged.update(0)
        assert _stat(store, "paused_seconds") - before <= time.monotonic() - started + 0.1  # rounding

    asyncio.run(run())
    assert _stat(store, "pauses") == 3


def test_paused_time_counts_the_crawl_paused_by_either_backlog_once() -> None:
    now = [0.0]
    stats = get_crawler().stats
    paused = PausedTime(stats, MAX_WAITING, clock=lambda: now[0])
    for at, call, reason in [(0, paused.hold, "items"), (1, paused.hold, "304s"), (2, paused.release, "items"),
                             (3, paused.release, "304s"), (4, paused.release, "304s"),  # not held: nothing
                             (10, paused.hold, "items"), (10.5, paused.release, "items")]:
        now[0] = at
        call(reason)
    assert stats.get_value(BACKPRESSURE + "pauses") == 2
    assert stats.get_value(BACKPRESSURE + "paused_seconds") == 3.5
