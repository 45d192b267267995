"""The crawl's calls on its source around the batches: the writer opens the source (its row, its
status, a first crawl sample) and records the crawl's end (status and last sample). Real crawls as
subprocesses, real signals, SQLite and PostgreSQL product DBs, each compared with the shop's truth:

- the node killed at each named step of those calls loses nothing, and the crawl resumed completes;
- a writer killed after its commit, before its reply (the crawler never learns it committed), is
  replaced and the call tried again, which records nothing twice: one opening sample, one end;
- PostgreSQL away for seconds while the source opens: the opening is retried and the crawl completes.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import (Crawler, CrawlSetup, is_stopped, process_state, product_store_opened,
                                       wait_for_pages, wait_logged)
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

SOURCE_STEPS = ("store.opening_source", "store.source_opened", "store.end_recorded")


def _each_stopped_writer(setup: CrawlSetup, node: Crawler, name: str, timeout: float = 180):  # type: ignore[no-untyped-def]
    """Yield each writer of ``node`` that froze at its ``stop`` crash point, until the node exits
    (the caller kills or continues it)."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while node.process.poll() is None:
        assert time.monotonic() < deadline, setup.log(name)[-3000:]
        for pid in node.children():
            if pid not in seen and is_stopped(pid):
                seen.add(pid)
                yield pid
        time.sleep(0.02)


def _samples(database_url: str) -> list[tuple[bool, int]]:
    """The crawl samples of source demo: (finished, pages), oldest first."""
    db = ProductDb(database_url)
    try:
        return [(bool(r.finished), int(r.pages)) for r in db.rows(
            "SELECT finished, pages FROM crawl_samples WHERE source_id = "
            "(SELECT id FROM sources WHERE name = 'demo') ORDER BY id")]
    finally:
        db.close()


def _status(database_url: str) -> str:
    db = ProductDb(database_url)
    try:
        return str(db.source_meta()["status"])
    finally:
        db.close()


@pytest.mark.parametrize("step", SOURCE_STEPS)
def test_a_node_killed_at_each_step_of_the_source_s_calls_loses_nothing(step: str, database_url: str,
                                                                         tmp_path: Path) -> None:
    with ShopProcess(40, seed=81) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start(name="killed", failpoints=f"{step}=kill")
        try:
            assert node.wait(180) == -signal.SIGKILL, setup.log("killed")[-3000:]
        finally:
            node.ensure_stopped()
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert _status(database_url) == "completed"
        assert _samples(database_url)[-1][0], "the resumed crawl's end is its last sample"
        assert_crawl_matches_truth(setup, shop.truth())


@pytest.mark.parametrize("step", ["store.source_opened", "store.end_recorded"])
def test_a_call_whose_reply_was_lost_is_tried_again_and_records_nothing_twice(step: str, database_url: str,
                                                                              tmp_path: Path) -> None:
    """The writer committed, then died before its reply: the crawler replaces it and tries again.
    The first writer to reach the step is killed there; its replacement, stopped at the same step,
    is let go on."""
    with ShopProcess(40, seed=82) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start(name="crawl", failpoints=f"{step}=stop")
        try:
            for n, writer in enumerate(_each_stopped_writer(setup, node, "crawl")):
                os.kill(writer, signal.SIGKILL if n == 0 else signal.SIGCONT)
            assert node.wait(60) == 0, setup.log("crawl")[-3000:]
        finally:
            node.ensure_stopped()
        log = setup.log("crawl")
        assert "retry 1" in log and "Traceback" not in log, log[-3000:]
        samples = _samples(database_url)
        assert samples[0] == (False, 0) and samples[-1][0], samples
        assert [finished for finished, pages in samples if pages == 0].count(False) == 1, samples
        assert [finished for finished, _ in samples].count(True) == 1, samples
        assert _status(database_url) == "completed"
        assert_crawl_matches_truth(setup, shop.truth())


def test_postgresql_away_while_the_source_opens_delays_the_crawl_s_store_only(tmp_path: Path) -> None:
    """The writer is about to open the source when PostgreSQL refuses this crawl's logins (for
    about 2 s): the opening is tried again with backoff, the items wait for it, and the crawl
    completes with the product DB matching the shop's truth."""
    with ShopProcess(40, seed=83) as shop, PostgresDatabase(own_role=True) as database:
        setup = CrawlSetup(tmp_path, shop.url, database.url)
        node = setup.start(name="crawl", failpoints="store.opening_source=stop")
        try:
            writer = next(_each_stopped_writer(setup, node, "crawl"))
            database.lock_out()
            os.kill(writer, signal.SIGCONT)
            wait_logged(setup, "crawl", node, "Could not open the crawl's source")
            time.sleep(2)
            database.let_in()
            assert node.wait(120) == 0, setup.log("crawl")[-3000:]
        finally:
            database.let_in()
            node.ensure_stopped()
        assert _samples(database.url)[0] == (False, 0) and _status(database.url) == "completed"
        assert_crawl_matches_truth(setup, shop.truth())


def test_a_lost_reply_tried_again_after_another_node_wrote_records_nothing_twice(tmp_path: Path) -> None:
    """Two nodes crawl one source (Redis frontier, PostgreSQL store). Node A's writer commits the
    crawl's end and dies before its reply; node B ends meanwhile (the source's metadata is B's now);
    A's new writer tries the end again: it must not add a third end sample (one per node). Before,
    a call was recognised by its values in the metadata, which B had replaced."""
    with ShopProcess(60, seed=85) as shop, PostgresDatabase() as database:
        setup = CrawlSetup(tmp_path, shop.url, database.url, redis_url())
        try:
            a = setup.start(name="a", failpoints="store.end_recorded=stop")
            b = setup.start(name="b")
            try:
                for n, writer in enumerate(_each_stopped_writer(setup, a, "a")):
                    if n == 0:
                        assert b.wait(120) == 0, setup.log("b")[-3000:]  # B's end is recorded after A's
                    os.kill(writer, signal.SIGKILL if n == 0 else signal.SIGCONT)
                assert a.wait(60) == 0, setup.log("a")[-3000:]
            finally:
                a.ensure_stopped()
                b.ensure_stopped()
            assert "retry 1" in setup.log("a")
            assert [finished for finished, _ in _samples(database.url)].count(True) == 2, _samples(database.url)
            assert_crawl_matches_truth(setup, shop.truth())
        finally:
            setup.cleanup()


def _stopping_while_the_source_opens(setup: CrawlSetup, shop: ShopProcess, name: str) -> tuple[Crawler, int]:
    """A crawl whose writer froze at the source's opening, some pages fetched, then Ctrl-C: closing now.
    The crawler and its frozen writer's pid (the caller continues it)."""
    node = setup.start(name=name, failpoints="store.opening_source=stop")
    try:
        writer = next(_each_stopped_writer(setup, node, name))
        wait_for_pages(shop, 10)
        node.signal(signal.SIGINT)
        wait_logged(setup, name, node, "Closing spider (shutdown)")
    except BaseException:
        node.ensure_stopped()
        raise
    return node, writer


def test_a_graceful_stop_while_the_source_opens_ends_the_crawl_once_and_loses_nothing(database_url: str,
                                                                                       tmp_path: Path) -> None:
    """Ctrl-C while the writer is still opening the source (frozen there; pages are fetched meanwhile
    and their items wait): the crawl says what it waits for (before, nothing after "Closing spider"),
    waits for the opening, stores what it has, records its end as interrupted (one opening sample,
    one end), exits 0; the crawl resumed completes."""
    with ShopProcess(40, seed=86) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node, writer = _stopping_while_the_source_opens(setup, shop, "stopped")
        try:
            wait_logged(setup, "stopped", node, "The store's writer has been opening the crawl's source for ")
            os.kill(writer, signal.SIGCONT)
            assert node.wait(60) == 0, setup.log("stopped")[-3000:]
        finally:
            node.ensure_stopped()
        assert "Traceback" not in setup.log("stopped"), setup.log("stopped")[-3000:]
        assert _status(database_url) == "interrupted"
        samples = _samples(database_url)
        assert samples[0] == (False, 0) and samples.count((False, 0)) == 1 and samples[-1][0], samples
        assert [finished for finished, _ in samples].count(True) == 1, samples  # progress may come between
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert _status(database_url) == "completed"
        assert [finished for finished, _ in _samples(database_url)].count(True) == 2, _samples(database_url)
        assert_crawl_matches_truth(setup, shop.truth())


def test_a_second_ctrl_c_while_the_writer_is_stuck_leaves_at_once_and_loses_nothing(database_url: str,
                                                                                      tmp_path: Path) -> None:
    """A graceful stop waits for the store's writer; the second Ctrl-C must not. Before, the reactor
    stopped and Python's exit then joined the writer's executor thread, which waited for the stuck
    call: the node hung on (a third Ctrl-C too). Now it leaves at once, its writer follows it (it
    exits when its crawler is gone), and the crawl resumed completes with nothing lost."""
    with ShopProcess(40, seed=88) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node, writer = _stopping_while_the_source_opens(setup, shop, "forced")
        try:
            node.signal(signal.SIGINT)
            node.wait(20)
        finally:
            node.ensure_stopped()
            os.kill(writer, signal.SIGCONT)  # it notices its crawler is gone and exits
        log = setup.log("forced")
        assert "forcing unclean shutdown" in log and "Traceback" not in log, log[-3000:]
        deadline = time.monotonic() + 10
        while process_state(writer) not in (None, "Z"):
            assert time.monotonic() < deadline, "the writer outlived its crawler"
            time.sleep(0.1)
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert _status(database_url) == "completed"
        assert_crawl_matches_truth(setup, shop.truth())





def _stopping_while_the_end_is_recorded(setup: CrawlSetup, name: str, failpoint: str, *settings: str) -> Crawler:
    """A crawl that finished, its writer held in recording the crawl's end after its commit, then
    Ctrl-C: the stop waits for the close under way (``extensions/whole_close.py``)."""
    node = setup.start(*settings, name=name, failpoints=f"store.end_recorded={failpoint}")
    try:
        deadline = time.monotonic() + 120
        while not product_store_opened(setup.database_url) or not any(f for f, _ in _samples(setup.database_url)):
            assert node.process.poll() is None and time.monotonic() < deadline, setup.log(name)[-3000:]
            time.sleep(0.1)
        node.signal(signal.SIGINT)
        wait_logged(setup, name, node, "Stopping: the crawl's close under way ends first")
    except BaseException:
        node.ensure_stopped()
        raise
    return node


@pytest.mark.parametrize("writer_mode", ["process", "thread"])
def test_a_second_ctrl_c_while_the_crawl_s_end_is_recorded_leaves_at_once_and_loses_nothing(
        writer_mode: str, database_url: str, tmp_path: Path) -> None:
    """The crawl has finished, and its writer (a child process, or a thread of the crawler) is held
    for good in the call that records the crawl's end, after its commit. Before, Ctrl-C made Scrapy
    end the crawl's task beside the held close and stop the reactor, and Python's exit then joined the
    writer's call: the node hung, a second Ctrl-C too. Now the first stop waits for the close and says
    so, the second leaves at once, a writer process follows its crawler out, and the crawl resumed
    completes."""
    with ShopProcess(40, seed=89) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = _stopping_while_the_end_is_recorded(setup, "forced", "hang", f"RECORDHOUND_STORE_WRITER={writer_mode}")
        try:
            writers = node.children()
            time.sleep(1)
            assert node.process.poll() is None, "a graceful stop waits for the writer's call"
            node.signal(signal.SIGINT)
            node.wait(20)
        finally:
            node.ensure_stopped()
        log = setup.log("forced")
        assert "leaving without waiting for the store's writer" in log and "Traceback" not in log, log[-3000:]
        assert bool(writers) == (writer_mode == "process"), writers  # the writer (and the resource tracker)
        deadline = time.monotonic() + 10
        while any(process_state(pid) not in (None, "Z") for pid in writers):
            assert time.monotonic() < deadline, "the writer outlived its crawler"
            time.sleep(0.1)
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert _status(database_url) == "completed"
        assert_crawl_matches_truth(setup, shop.truth())


def test_a_graceful_stop_while_the_crawl_s_end_is_recorded_waits_for_it(database_url: str, tmp_path: Path) -> None:
    """Ctrl-C while the writer is slow to answer the call that records the crawl's end (frozen after
    its commit): the stop waits for the whole close, which ends as usual ("Spider closed"), exit 0.
    Before, the stop ended the crawl's task at once and the reactor stopped with the close cut short
    (Python's exit waited for the writer's call, unsaid; the rest of the close never ran)."""
    with ShopProcess(40, seed=90) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = _stopping_while_the_end_is_recorded(setup, "stopped", "stop")
        try:
            writer = next(pid for pid in node.children() if is_stopped(pid))
            os.kill(writer, signal.SIGCONT)
            assert node.wait(30) == 0, setup.log("stopped")[-3000:]
        finally:
            node.ensure_stopped()
        log = setup.log("stopped")
        assert "Traceback" not in log and "leaving without" not in log and "Spider closed (finished)" in log, log
        assert _status(database_url) == "completed"
        assert [finished for finished, _ in _samples(database_url)].count(True) == 1, _samples(database_url)
        assert_crawl_matches_truth(setup, shop.truth())
