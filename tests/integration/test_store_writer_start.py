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
from collections.abc import Callable
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
from tests.integration.crawlers import Crawler, CrawlSetup, wait_logged
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
    try:
        with engine.connect() as conn:
            meta = conn.execute(text("SELECT metadata FROM sources WHERE name = 'demo'")).scalar_one()
    finally:
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
        _stop_group_once(setup, setup.start(name="stopped", session=True),
                         lambda: "Storing items of source" in setup.log("stopped"), signal.SIGINT)
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
            wait_logged(setup, "killed", node, "Storing items of source", 120)
            assert node.children(), "the writer was started when the store opened"
            assert node.kill() == [], "a writer outlived its crawler by 10 s"
        finally:
            node.ensure_stopped()
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())


def _writers(pids: list[int]) -> list[int]:
    """The writer processes among ``pids`` (not multiprocessing's resource tracker)."""
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if b"spawn_main(" in cmdline.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def test_scrapy_crawl_starts_the_writer_before_its_crawler_and_the_store_takes_it(database_url: str,
                                                                                 tmp_path: Path) -> None:
    """The writer process is started by `scrapy crawl` when its start-up check passed, before Scrapy
    builds the crawler (so before the spider opens), and the store adopts it: one writer for the
    whole crawl, none left after, and the product DB matches the shop's truth."""
    with ShopProcess(40, seed=76) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start()
        seen: set[int] = set()
        try:
            deadline = time.monotonic() + 120
            while "Spider opened" not in setup.log("crawl"):
                assert node.process.poll() is None and time.monotonic() < deadline, setup.log("crawl")[-3000:]
                seen.update(_writers(node.children()))
                time.sleep(0.01)
            assert seen, "no writer process before the spider opened"
            while node.process.poll() is None:
                seen.update(_writers(node.children()))
                time.sleep(0.01)
            assert node.wait(120) == 0, setup.log("crawl")[-3000:]
        finally:
            node.ensure_stopped()
        assert len(seen) == 1, seen
        assert_crawl_matches_truth(setup, shop.truth())


def test_a_writer_started_for_other_settings_is_stopped_not_adopted(tmp_path: Path) -> None:
    from recordhound.pipelines import writer_process

    store = _store(f"sqlite:///{tmp_path / 'product.sqlite3'}", str(tmp_path))
    other = StoreConfig(**{**store.config.__dict__, "batch_size": store.config.batch_size + 1})
    before = _children()
    writer_process.start_early(other, store.review, True)
    [early] = _children() - before
    assert writer_process.adopt_early(store.config, store.review, True) is None
    deadline = time.monotonic() + 10
    while early in _children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert early not in _children()
    writer_process.start_early(store.config, store.review, True)
    adopted = writer_process.adopt_early(store.config, store.review, True)
    assert adopted is not None and writer_process.adopt_early(store.config, store.review, True) is None
    adopted.discard()


def test_a_writer_that_died_idle_is_replaced_to_record_the_crawl_s_end(database_url: str, tmp_path: Path) -> None:
    """The writer dies between batches (the system's doing): the crawl's end is still recorded, its
    status and its last sample, by a new writer (before, the end went unrecorded: "in progress")."""
    store = _store(database_url, str(tmp_path))

    async def run() -> None:
        writer = await _started_writer(store)
        for n in range(3):
            await store.process_item(_release(n))
        os.kill(writer, signal.SIGKILL)
        while writer in _children():
            await asyncio.sleep(0.05)
        await store.close_spider()
        await store._spider_closed("finished")

    asyncio.run(run())
    assert _source_status(database_url) == "completed"
    engine = make_engine(database_url)
    with engine.connect() as conn:
        samples = conn.execute(text("SELECT finished, stored FROM crawl_samples ORDER BY id")).all()
    engine.dispose()
    assert [tuple(s) for s in samples] == [(False, 0), (True, 3)]


def test_a_sigterm_to_the_whole_group_leaves_the_writer_to_the_crawler(database_url: str, tmp_path: Path) -> None:
    """A service manager stops a crawl by sending SIGTERM to its whole process group: the crawler
    stops gracefully, its writer is not killed by it (it is the crawler's to close), the crawl's end
    is recorded, and the crawl resumed afterwards matches the shop's truth."""
    with ShopProcess(40, seed=77) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start("DOWNLOAD_DELAY=0.2", name="stopped", session=True)  # slow: it is still crawling
        _stop_group_once(setup, node, lambda: _is_open(database_url), signal.SIGTERM)
        log = setup.log("stopped")
        assert "writer process died" not in log and "Traceback" not in log, log[-3000:]
        assert _source_status(database_url) == "interrupted"
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())


def _stop_group_once(setup: CrawlSetup, node: Crawler, ready: Callable[[], bool], signum: int) -> None:
    """Once ``ready()``, ``signum`` to the crawler's whole process group; it must then exit 0."""
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert node.process.poll() is None and time.monotonic() < deadline, setup.log("stopped")[-3000:]
            time.sleep(0.02)
        node.signal_group(signum)
        assert node.wait(60) == 0, setup.log("stopped")[-3000:]
    finally:
        node.ensure_stopped()


def _is_open(database_url: str) -> bool:
    """The writer opened the crawl's source (so it started: its signals are set)."""
    try:
        return _source_status(database_url) == "in_progress"
    except Exception:  # noqa: BLE001 - no schema or no row yet
        return False
