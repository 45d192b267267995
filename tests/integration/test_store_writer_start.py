"""The store's writer process starts when the store opens, not at the first batch: it imports while
the crawl fetches its first pages (a node's start-up, docs/benchmarks.md). A writer killed before its
first batch loses nothing (the first write starts another); one that never took a batch does not hold
up the store's close; a terminal's Ctrl-C while it starts is the crawler's to handle. SQLite and
PostgreSQL product databases."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from sqlalchemy import text

from recordhound.config import ReviewConfig, StoreConfig
from recordhound.db.engine import make_engine
from recordhound.demo.process import ShopProcess
from recordhound.items import Offer, Release
from recordhound.pipelines.store import StorePipeline
from recordhound.sources import load_profile
from tests.integration.crawlers import CrawlSetup
from tests.integration.truthcheck import assert_crawl_matches_truth


def _store(database_url: str, tmp: str) -> StorePipeline:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    settings.setdict({"RECORDHOUND_DATABASE_URL": database_url, "RECORDHOUND_REVIEW_PATH": f"{tmp}/review.sqlite3",
                      "RECORDHOUND_TRUST_NEW_ENTITIES": True})
    crawler = get_crawler()
    crawler.engine = SimpleNamespace(paused=False, pause=lambda: None, unpause=lambda: None)  # type: ignore[assignment]
    crawler.spider = SimpleNamespace(profile=load_profile("demo"))  # type: ignore[assignment]
    return StorePipeline(crawler, StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings))


def _children() -> set[int]:
    return {p.pid for p in multiprocessing.active_children() if p.is_alive() and p.pid is not None}


def _release(n: int) -> Release:
    url = f"http://shop/release/{n}"
    return Release("demo", url, f"DR-{n}", f"Title {n}", [f"Artist {n}"], "Fold Records", f"FLD-{n:03d}", 2001,
                   ["House"], offers=[Offer(f"DR-{n}", url, "LP", "new", None, None, None, None)])


async def _started_writer(store: StorePipeline) -> int:
    """The pid of the writer process the store started when it opened (before any item)."""
    before = _children()  # other tests in this process may have children of their own
    await store.open_spider()
    deadline = time.monotonic() + 20
    while not _children() - before and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    started = _children() - before
    assert len(started) == 1, started  # no item was given to the store
    return started.pop()


async def _store_three_and_close(store: StorePipeline) -> None:
    for n in range(3):
        await store.process_item(_release(n))
    await store.close_spider()
    await store._spider_closed("finished")  # what Scrapy's spider_closed signal calls


def _stored_offers(database_url: str) -> list[str]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        found = conn.execute(text("SELECT external_id FROM offers ORDER BY id")).scalars().all()
    engine.dispose()
    return list(found)


def _source_status(database_url: str) -> str:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        meta = conn.execute(text("SELECT metadata FROM sources WHERE name = 'demo'")).scalar_one()
    engine.dispose()
    return str((meta if isinstance(meta, dict) else json.loads(meta))["status"])


def test_the_writer_process_runs_before_the_first_item(database_url: str, tmp_path) -> None:
    store = _store(database_url, str(tmp_path))

    async def run() -> int:
        writer = await _started_writer(store)
        await _store_three_and_close(store)
        return writer

    assert asyncio.run(run()) not in _children()  # the store's close ended it
    assert _stored_offers(database_url) == ["DR-0", "DR-1", "DR-2"]


def test_a_writer_killed_before_the_first_item_is_replaced_and_nothing_is_lost(database_url: str, tmp_path) -> None:
    store = _store(database_url, str(tmp_path))

    async def run() -> tuple[int, set[int]]:
        writer = await _started_writer(store)
        before = _children() - {writer}
        os.kill(writer, signal.SIGKILL)
        await _store_three_and_close(store)
        return writer, before

    writer, before = asyncio.run(run())
    assert store.crawler.stats.get_value("recordhound/store/items") == 3
    assert writer not in _children() and _children() <= before  # the replacement ended with the store too
    assert _stored_offers(database_url) == ["DR-0", "DR-1", "DR-2"]


def test_a_close_right_after_open_does_not_wait_for_a_writer_that_took_no_batch(database_url: str, tmp_path) -> None:
    """A graceful stop (or a crawl with nothing to store) right after the store opened, while another
    process holds the review queue's file locked. The store closes without waiting for that file (before,
    the writer's start waited for it, and close for the start): the writer opens the review queue at its
    first batch, so it records the crawl's end meanwhile, and is gone after."""
    store = _store(database_url, str(tmp_path))
    review = sqlite3.connect(tmp_path / "review.sqlite3", isolation_level=None, check_same_thread=False)
    review.execute("BEGIN EXCLUSIVE")  # the writer's start waits for this file
    released = threading.Event()

    def release() -> None:
        released.set()
        review.execute("ROLLBACK")
    unlock = threading.Timer(30, release)

    async def run() -> tuple[int, bool]:
        writer = await _started_writer(store)
        await store.close_spider()
        closed_while_locked = not released.is_set()
        await store._spider_closed("shutdown")
        return writer, closed_while_locked

    unlock.start()
    try:
        writer, closed_while_locked = asyncio.run(run())
    finally:
        unlock.cancel()
        if not released.is_set():
            release()
        review.close()
    assert closed_while_locked, "close waited for the writer's start"
    assert writer not in _children()
    assert _source_status(database_url) == "interrupted"


def test_ctrl_c_while_the_writer_starts_is_the_crawlers_to_handle(database_url: str, tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the crawler and its writer at once, here while the writer is still
    importing: the crawler stops gracefully, the writer neither dies with a KeyboardInterrupt nor has
    to be replaced, and the crawl resumed afterwards matches the shop's truth (SQLite, PostgreSQL)."""
    with ShopProcess(40, seed=71) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start(name="stopped", session=True)
        try:
            deadline = time.monotonic() + 120
            while "Storing items of source" not in setup.log("stopped"):
                assert node.process.poll() is None and time.monotonic() < deadline, setup.log("stopped")[-3000:]
                time.sleep(0.02)
            node.signal_group(signal.SIGINT)
            assert node.wait(60) == 0, setup.log("stopped")[-3000:]
        finally:
            node.ensure_stopped()
        log = setup.log("stopped")
        for sign in ("KeyboardInterrupt", "Traceback", "writer process died", "did not start"):
            assert sign not in log, log[-3000:]
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())


def test_kill_9_while_the_writer_starts_leaves_no_writer_behind_and_loses_nothing(database_url: str,
                                                                                    tmp_path: Path) -> None:
    """kill -9 of the crawler just after the store opened, its writer still starting: the writer
    follows it (it watches its parent before anything else), and the crawl resumed afterwards matches
    the shop's truth: offers field by field, only the known fault pages failed, ids (and PostgreSQL's
    sequences) consecutive."""
    with ShopProcess(40, seed=72) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start(name="killed")
        try:
            deadline = time.monotonic() + 120
            while "Storing items of source" not in setup.log("killed"):
                assert node.process.poll() is None and time.monotonic() < deadline, setup.log("killed")[-3000:]
                time.sleep(0.02)
            assert node.children(), "the writer was started when the store opened"
            assert node.kill() == [], "a writer outlived its crawler by 10 s"
        finally:
            node.ensure_stopped()
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())
