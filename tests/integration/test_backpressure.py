"""Back-pressure: a product store slower than the crawl pauses the crawl, so what waits for the
store stays within RECORDHOUND_STORE_MAX_WAITING_ITEMS, and nothing is lost (not even when the
crawl is stopped while paused).

The store is made slow on purpose (RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS). The bound is
checked as outcomes: the crawl's own peak of items waiting, and, from outside, how far the
product pages the shop served ran ahead of the offers committed to the product DB (sampled
while the crawl runs). The pause counts the pages on their way to the store too (downloading,
being parsed), so what lands after it began was already counted; only pages started between
two counts can pass the bound, fewer than one downloader's worth (CONCURRENT_REQUESTS).
Without back-pressure the same crawl runs the whole catalog (~300 pages) ahead of its store.

A paused node starts nothing, so it returns the requests it leased and had not started (no
attempt counted): another node on the same frontier fetches them while it waits for its store.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from recordhound.demo.process import ShopProcess
from recordhound.frontier.backend import Counts
from tests.integration.crawlers import CrawlSetup, Crawler
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

RELEASES = 300
BOUND = 30
CONCURRENCY = 16  # CONCURRENT_REQUESTS of these crawls
IN_FLIGHT = CONCURRENCY  # what may pass the bound (see above)


def slow_store(seconds_per_item: float) -> tuple[str, ...]:
    return (f"RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS={seconds_per_item}",
            f"RECORDHOUND_STORE_MAX_WAITING_ITEMS={BOUND}", "RECORDHOUND_STORE_BATCH_SIZE=10",
            f"CONCURRENT_REQUESTS={CONCURRENCY}", f"CONCURRENT_REQUESTS_PER_DOMAIN={CONCURRENCY}")


class Ahead:
    """How many of the shop's product pages were served beyond the offers stored, at most."""

    def __init__(self, shop: ShopProcess, database_url: str, truth: dict[str, Any]) -> None:
        self.shop, self.db = shop, ProductDb(database_url)
        self.pages = {offer["path"] for offer in truth["offers"]}
        self.most = 0

    def sample(self) -> None:
        served = sum(1 for path, hits in self.shop.hits().items() if hits and path in self.pages)
        try:
            stored = int(self.db.scalar("SELECT count(*) FROM offers"))
        except Exception:  # noqa: BLE001 - the tables are created when the crawl opens
            stored = 0
        self.most = max(self.most, served - stored)

    def watch(self, crawler: Crawler) -> None:
        while crawler.process.poll() is None:
            self.sample()
            time.sleep(0.05)

    def wait_paused(self, crawler: Crawler) -> None:
        """Until the store is behind and the shop has served nothing for a while: the crawl is paused."""
        quiet, served = 0, -1
        while crawler.process.poll() is None and quiet < 4:
            self.sample()
            now = self.shop.pages_served()
            quiet, served = (quiet + 1 if now == served and self.most >= BOUND // 2 else 0), now
            time.sleep(0.1)

    def close(self) -> None:
        self.db.engine.dispose()


def _setup(frontier: str, tmp_path: Path, shop: ShopProcess, database_url: str) -> CrawlSetup:
    return CrawlSetup(tmp_path, shop.url, database_url, redis_url() if frontier == "redis" else "")


@pytest.mark.parametrize("frontier", ["embedded", "redis"])
def test_a_slow_store_pauses_the_crawl_within_the_bound(frontier: str, database_url: str, tmp_path: Path) -> None:
    with ShopProcess(RELEASES, seed=5) as shop:
        truth = shop.truth()
        setup = _setup(frontier, tmp_path, shop, database_url)
        ahead = Ahead(shop, database_url, truth)
        crawler = setup.start(*slow_store(0.02))  # 50 items/s: several times slower than the crawl
        try:
            ahead.watch(crawler)
            assert crawler.wait(120) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
            assert ahead.most <= BOUND + IN_FLIGHT, f"{ahead.most} pages served ahead of the store"
            stats = crawler.stats()
            assert stats.get("recordhound/backpressure/pauses", 0) >= 1
            assert 0 < stats["recordhound/backpressure/max_waiting_items"] <= BOUND + IN_FLIGHT
            assert_crawl_matches_truth(setup, truth)  # nothing lost, IDs consecutive, only the known faults failed
        finally:
            crawler.ensure_stopped()
            ahead.close()
            setup.cleanup()


@pytest.mark.parametrize("frontier", ["embedded", "redis"])
def test_sigterm_while_paused_for_the_store_stops_cleanly_and_loses_nothing(
    frontier: str, tmp_path: Path
) -> None:
    database_url = f"sqlite:///{tmp_path / 'product.sqlite3'}"
    with ShopProcess(RELEASES, seed=6) as shop:
        truth = shop.truth()
        setup = _setup(frontier, tmp_path, shop, database_url)
        ahead = Ahead(shop, database_url, truth)
        crawler = setup.start(*slow_store(0.05), name="stopped")  # 20 items/s
        resumed: Crawler | None = None
        try:
            ahead.wait_paused(crawler)
            crawler.signal(signal.SIGTERM)
            assert crawler.wait(120) == 0, (tmp_path / "stopped.log").read_text()[-3000:]
            stats = crawler.stats()
            assert stats.get("recordhound/backpressure/pauses", 0) >= 1
            counts = setup.counts()
            assert counts.leased_total == 0 and counts.queued > 0, counts  # stored work acked, the rest returned
            resumed = setup.start(name="resumed")
            assert resumed.wait(120) == 0, (tmp_path / "resumed.log").read_text()[-3000:]
            assert_crawl_matches_truth(setup, truth)
        finally:
            for process in (crawler, resumed):
                if process is not None:
                    process.ensure_stopped()
            ahead.close()
            setup.cleanup()


STUCK_BOUND, STUCK_CONCURRENCY = 4, 2
STUCK_STORE = (  # a minute per item: once 4 items wait the node stays paused, whatever it leased in hand
    "RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS=60", f"RECORDHOUND_STORE_MAX_WAITING_ITEMS={STUCK_BOUND}",
    "RECORDHOUND_STORE_BATCH_SIZE=1", f"CONCURRENT_REQUESTS={STUCK_CONCURRENCY}",
    f"CONCURRENT_REQUESTS_PER_DOMAIN={STUCK_CONCURRENCY}", "RECORDHOUND_FRONTIER_LEASE_BATCH=40")


def _leases(setup: CrawlSetup, crawler: Crawler) -> tuple[int, Counts]:
    """What ``crawler`` holds in the frontier store, and the crawl's counts."""
    backend = setup.backend()
    try:
        nodes = {node for node, info in backend.nodes().items() if info.pid == crawler.process.pid}
        counts = backend.counts()
        return sum(n for node, n in counts.leased.items() if node in nodes), counts
    finally:
        backend.close()


def _wait_quiet(shop: ShopProcess, crawler: Crawler, seconds: float = 3.0, timeout: float = 120) -> None:
    """Until the shop has served pages and then nothing for ``seconds``: the crawler is paused."""
    deadline, served, since = time.monotonic() + timeout, -1, time.monotonic()
    while True:
        assert crawler.process.poll() is None and time.monotonic() < deadline, "the crawler never paused"
        now = shop.pages_served()
        if now != served:
            served, since = now, time.monotonic()
        elif served and time.monotonic() - since >= seconds:
            return
        time.sleep(0.1)


@pytest.mark.parametrize("frontier", ["embedded", "redis"])
def test_a_node_paused_for_its_store_returns_unstarted_leases_and_another_node_fetches_them(
    frontier: str, tmp_path: Path
) -> None:
    with ShopProcess(100, seed=7) as shop, PostgresDatabase() as database:
        setup = _setup(frontier, tmp_path, shop, database.url)
        stuck = setup.start(*STUCK_STORE, name="stuck")
        other: Crawler | None = None
        try:
            _wait_quiet(shop, stuck)  # paused (many ticks of its scheduler ago)
            held, counts = _leases(setup, stuck)
            # what it holds is what it started (items waiting for the store, pages in flight), not its lease batch
            assert 0 < held <= STUCK_BOUND + STUCK_CONCURRENCY, f"the paused node holds {held} leases: {counts}"
            other = setup.start(name="other")
            deadline = time.monotonic() + 120
            while (found := _leases(setup, stuck))[1].to_fetch or found[1].leased_total > found[0]:
                assert time.monotonic() < deadline, f"the other node did not fetch the rest: {found}"
                assert other.process.poll() is None, (tmp_path / "other.log").read_text()[-3000:]
                time.sleep(0.2)
            # still paused (its first item takes a minute to write): all the rest was fetched by the other node
            assert stuck.process.poll() is None and found[0] <= held, found
            stuck.kill()  # its started pages come back to the other node, which finishes the crawl
            assert other.wait(120) == 0, (tmp_path / "other.log").read_text()[-3000:]
            assert_crawl_matches_truth(setup, shop.truth())
        finally:
            for process in (stuck, other):
                if process is not None:
                    process.ensure_stopped()
            setup.cleanup()

