"""A suspect (a page a dead node held) is tried alone, and a death during its try counts against it. Kills that
land while a node is still starting must not: its product store not open yet, a page's items wait for the
writer, and a try begun then would take the node's start-up for the page's own work. Real crawler processes
and writer children, a demo shop, PostgreSQL as the product DB, both frontier backends."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import Crawler, CrawlSetup, children_of, process_state
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

MAX_ATTEMPTS = 5  # RECORDHOUND_FRONTIER_MAX_ATTEMPTS's default
SETTLE_SECONDS = 2.0  # a node with a frozen writer crawls fresh pages this long before it is killed


@pytest.fixture
def product_db() -> Iterator[str]:
    with PostgresDatabase() as database:
        yield database.url


def _writer_frozen(crawler: Crawler, timeout: float = 60) -> None:
    """Until the crawler's writer child stopped itself at ``store.opening_source`` (SIGSTOP)."""
    deadline = time.monotonic() + timeout
    while not any(process_state(child) == "T" for child in children_of(crawler.process.pid)):
        assert crawler.process.poll() is None and time.monotonic() < deadline, "the writer never froze"
        time.sleep(0.05)


def _kill_with_children(crawler: Crawler) -> None:
    """SIGKILL the crawler, then its children: a frozen writer cannot see its parent die."""
    children = children_of(crawler.process.pid)
    crawler.process.send_signal(signal.SIGKILL)
    assert crawler.wait(30) == -signal.SIGKILL
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_kills_while_a_node_s_store_opens_do_not_count_against_the_suspects_it_holds(
    kind: str, tmp_path: Path, product_db: str
) -> None:
    """A node dies in company (crash point ``spider.output_exhausted``, third page): every page it held is a
    suspect. Then ``MAX_ATTEMPTS`` nodes in a row are killed while their store is opening (the writer frozen
    at ``store.opening_source``), each after crawling fresh pages for a while. A last run without a fault
    finishes the crawl: ``failed`` holds only the shop's fault pages and the product DB equals the shop's
    truth. Before, each node tried its first suspect at once; its item waited for the frozen writer, every
    kill counted against that good page, and it was failed "leased 5 times without an outcome"."""
    with ShopProcess(40, seed=73) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
        try:
            first = setup.start(name="first", failpoints="spider.output_exhausted=kill@3")
            assert first.wait(180) == -signal.SIGKILL, setup.log("first")[-3000:]
            assert setup.counts().leased_total > 1  # the suspects: every page it held
            for run in range(MAX_ATTEMPTS):
                node = setup.start(name=f"starting{run}", failpoints="store.opening_source=stop")
                _writer_frozen(node)
                time.sleep(SETTLE_SECONDS)
                assert node.process.poll() is None, setup.log(f"starting{run}")[-3000:]
                _kill_with_children(node)
            last = setup.start(name="last")
            assert last.wait(180) == 0, setup.log("last")[-3000:]
            assert_crawl_matches_truth(setup, shop.truth())
            counts = setup.counts()
            assert counts.drained and counts.status == "completed", counts
        finally:
            setup.cleanup()
