"""A private Redis with AOF, restarted in the middle of a crawl: the crawl completes, nothing lost."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy.settings import Settings

from recordhound.config import ReviewConfig, StoreConfig
from recordhound.db.engine import make_engine
from recordhound.demo.process import ShopProcess
from recordhound.catalog.apply import ApplyWorker
from recordhound.review.docstore import RedisDocStore
from recordhound.catalog.writer import open_writer
from recordhound.review.queue import PARKED, ReviewQueue
from tests.integration.crawlers import CrawlSetup, wait_for_pages
from tests.integration.truthcheck import assert_crawl_matches_truth, assert_frontier_clean, assert_product_db_matches
from tests.redisserver import RedisServer
from tests.services import PostgresDatabase


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """An AOF-persisted redis-server of this test's own (SIGTERM flushes the AOF; started again on its port)."""
    server = RedisServer(tmp_path / "redis", "--appendonly", "yes", "--appendfsync", "everysec", "--save", "").start()
    yield server
    server.stop()


def test_crawl_survives_a_redis_restart(tmp_path: Path, private_redis: RedisServer) -> None:
    with ShopProcess(1500, seed=5) as shop, PostgresDatabase() as database:
        setup = CrawlSetup(tmp_path, shop.url, database.url, private_redis.url)
        crawler = setup.start(name="crawl")
        try:
            wait_for_pages(shop, 500)
            private_redis.stop()
            time.sleep(3)  # the crawler notices, pauses and retries
            private_redis.start()
            assert crawler.wait(300) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        finally:
            crawler.ensure_stopped()
        log = (tmp_path / "crawl.log").read_text()
        assert "Frontier backend failed" in log and "reachable again" in log
        assert_crawl_matches_truth(setup, shop.truth())


def test_an_untrusted_crawl_survives_a_redis_restart_every_item_parked_then_approved(
    tmp_path: Path, private_redis: RedisServer,
) -> None:
    """The review queue lives in the same Redis: its outage pauses the writer, it loses nothing."""
    with ShopProcess(600, seed=6) as shop, PostgresDatabase() as database:
        setup = CrawlSetup(tmp_path, shop.url, database.url, private_redis.url)
        crawler = setup.start("RECORDHOUND_STORE_BATCH_SIZE=20", name="crawl", trusted=False)
        try:
            wait_for_pages(shop, 200)
            private_redis.stop()
            time.sleep(5)
            private_redis.start()
            assert crawler.wait(300) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        finally:
            crawler.ensure_stopped()
        truth = shop.truth()
        assert_frontier_clean(setup, truth)  # no item failed for the outage: only the fault pages
        queue = ReviewQueue(RedisDocStore(private_redis.url, setup.prefix))
        try:
            parked = {key.split(":", 1)[1] for key in queue.store.run(lambda txn: list(txn.all(PARKED)))}
            assert parked == {o["external_id"] for o in truth["offers"]}  # every item waits, once
            for entry in queue.entries():
                queue.decide(entry["id"], "approve")
            settings = _settings(RECORDHOUND_REDIS_URL=private_redis.url, RECORDHOUND_REDIS_PREFIX=setup.prefix,
                                 RECORDHOUND_DATABASE_URL=database.url)
            review = ReviewConfig.from_settings(settings)
            engine = make_engine(database.url)
            writer = open_writer(engine, StoreConfig.from_settings(settings), review, trusted=False)
            assert ApplyWorker(engine, queue, writer, review).run()["failed"] == 0
            engine.dispose()
        finally:
            queue.store.drop()
            queue.close()
        assert_product_db_matches(database.url, truth)


def _settings(**values: str) -> Settings:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    settings.update(values)
    return settings
