"""Several nodes on one Redis frontier: a frozen node is fenced off, starts are never empty,
and a node that dies between claiming the start requests and writing them is taken over."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, product_store_opened, wait_for_pages, wait_joined
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

LEASE = ("RECORDHOUND_FRONTIER_LEASE_SECONDS=3",)


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopProcess]:
    with ShopProcess(400, seed=43) as running:
        yield running


@pytest.fixture
def product_db() -> Iterator[str]:
    with PostgresDatabase() as database:
        yield database.url


def _leases_of_pid(setup: CrawlSetup, pid: int) -> int:
    backend = setup.backend()
    try:
        nodes = {node for node, info in backend.nodes().items() if info.pid == pid}
        return sum(n for node, n in backend.counts().leased.items() if node in nodes)
    finally:
        backend.close()


def test_a_node_frozen_past_its_lease_is_fenced_off_and_nothing_is_lost(
    tmp_path: Path, shop: ShopProcess, product_db: str,
) -> None:
    setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
    try:
        frozen = setup.start(*LEASE, "DOWNLOAD_DELAY=0.02", name="frozen")
        other = setup.start(*LEASE, "DOWNLOAD_DELAY=0.02", name="other")
        wait_for_pages(shop, shop.pages_served() + 60)
        deadline = time.monotonic() + 20
        while _leases_of_pid(setup, frozen.process.pid) == 0:  # freeze it while it holds work
            assert time.monotonic() < deadline, "the node never held a lease"
            time.sleep(0.02)
        frozen.signal(signal.SIGSTOP)
        time.sleep(9)  # three lease times: the other node takes its leases over
        frozen.signal(signal.SIGCONT)
        assert other.wait(300) == 0, (tmp_path / "other.log").read_text()[-3000:]
        assert frozen.wait(300) == 0, (tmp_path / "frozen.log").read_text()[-3000:]
        stats = frozen.stats()  # its late acks: refused by the store, or dropped once it re-synced with it
        assert stats.get("recordhound/frontier/stale_refused", 0) + stats.get("recordhound/frontier/stale_dropped", 0) > 0
        assert other.stats().get("recordhound/frontier/reclaimed", 0) > 0  # its leases, taken over
        assert_crawl_matches_truth(setup, shop.truth())
    finally:
        setup.cleanup()


def test_ten_fresh_two_node_starts_both_nodes_crawl(tmp_path: Path, product_db: str) -> None:
    with ShopProcess(200, seed=44) as small:
        for attempt in range(10):
            setup = CrawlSetup(tmp_path / f"start{attempt}", small.url, product_db, redis_url())
            setup.workdir.mkdir()
            try:
                # ~5 s of work for one node: a node that starts a moment later still finds some
                nodes = [setup.start("DOWNLOAD_DELAY=0.02", name=f"node{i}") for i in range(2)]
                codes = [node.wait(300) for node in nodes]
                assert codes == [0, 0], f"start {attempt}: exit codes {codes}"
                pages = [node.stats().get("response_received_count", 0) for node in nodes]
                assert all(pages), f"start {attempt}: a node exited with no page: {pages}"
                counts = setup.counts()
                assert counts.drained and counts.status == "completed"
            finally:
                setup.cleanup()


def test_a_node_killed_between_start_claim_and_start_flush_is_taken_over(
    tmp_path: Path, shop: ShopProcess, product_db: str,
) -> None:
    setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
    try:
        first = setup.start(name="first", failpoints="frontier.after_start_claim=stop")
        deadline = time.monotonic() + 60
        while not setup.counts().start_claim:  # it claimed the start requests, and froze there
            assert time.monotonic() < deadline and first.process.poll() is None
            time.sleep(0.05)
        second = setup.start(name="second")
        time.sleep(3)  # the second node waits for the live claimant: it must not finish an empty crawl
        assert second.process.poll() is None, (tmp_path / "second.log").read_text()[-3000:]
        first.kill()
        assert second.wait(300) == 0, (tmp_path / "second.log").read_text()[-3000:]
        assert second.stats()["response_received_count"] > shop.truth()["counts"]["offers"]
        assert_crawl_matches_truth(setup, shop.truth())
    finally:
        setup.cleanup()


def test_a_process_given_a_node_id_in_use_exits_1_with_one_line_and_opens_nothing(
    tmp_path: Path, shop: ShopProcess, product_db: str,
) -> None:
    """RECORDHOUND_NODE_ID set to the id of a live node: the second process says so in one line and
    exits 1, without a traceback, without touching its product store; the first crawls on."""
    setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
    first = setup.start("RECORDHOUND_NODE_ID=same", "DOWNLOAD_DELAY=0.02", name="first")
    nodes = [first]
    try:
        wait_joined(setup, "first", first)
        own_store = f"sqlite:///{tmp_path / 'second.sqlite'}"
        second = setup.start("RECORDHOUND_NODE_ID=same", f"RECORDHOUND_DATABASE_URL={own_store}", name="second")
        nodes.append(second)
        assert second.wait(120) == 1
        log = setup.log("second")
        assert "error: the crawl stopped: frontier: node id 'same' (RECORDHOUND_NODE_ID) is in use by pid " \
               f"{first.process.pid}" in log, log[-2500:]
        assert "'finish_reason': 'frontier_refused'" in log, log[-2500:]
        assert "Traceback" not in log, log[-2500:]
        stats = second.stats()  # written although its engine never started
        assert (stats["finish_reason"], stats["recordhound/frontier/not_joined"]) == ("frontier_refused",) * 2
        assert not product_store_opened(own_store), "the product store was opened"
        assert first.wait(300) == 0, setup.log("first")[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())
    finally:
        for node in nodes:
            node.ensure_stopped()
        setup.cleanup()
