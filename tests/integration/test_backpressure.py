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
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, Crawler
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import redis_url

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
