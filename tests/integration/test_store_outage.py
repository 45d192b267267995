"""The product database goes away mid-crawl: the crawl pauses, retries, and loses nothing."""

from __future__ import annotations

import time
from pathlib import Path

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, wait_for_pages
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase


def test_database_down_mid_crawl_pauses_then_stores_everything(tmp_path: Path) -> None:
    with ShopProcess(1500, seed=9) as shop, PostgresDatabase(own_role=True) as database:
        setup = CrawlSetup(tmp_path, shop.url, database.url)
        crawler = setup.start(name="crawl")
        try:
            wait_for_pages(shop, 400)
            database.lock_out()  # PostgreSQL gone for this crawl: sessions killed, logins refused
            time.sleep(10)
            database.let_in()
            assert crawler.wait(300) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        finally:
            database.let_in()
            crawler.ensure_stopped()
        log = (tmp_path / "crawl.log").read_text()
        assert "crawl paused, retry" in log and "crawl resumed" in log
        assert_crawl_matches_truth(setup, shop.truth())  # IDs consecutive, sequences at max(id) too
