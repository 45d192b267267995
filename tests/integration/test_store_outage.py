"""The product database goes away mid-crawl: the crawl pauses, retries, and loses nothing."""

from __future__ import annotations

import time
from pathlib import Path

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, wait_for_hits
from tests.integration.dbcheck import ProductDb
from tests.services import PostgresDatabase


def test_database_down_mid_crawl_pauses_then_stores_everything(tmp_path: Path) -> None:
    with ShopProcess(1500, seed=9) as shop, PostgresDatabase(own_role=True) as database:
        setup = CrawlSetup(tmp_path, shop.url, database.url)
        crawler = setup.start(name="crawl")
        try:
            wait_for_hits(shop, 400)
            database.lock_out()
            time.sleep(4)
            database.let_in()
            assert crawler.wait(300) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        finally:
            database.let_in()
            crawler.ensure_stopped()
        log = (tmp_path / "crawl.log").read_text()
        assert "crawl paused, retry" in log and "crawl resumed" in log
        truth = shop.truth()
        db = ProductDb(database.url)
        counts = db.counts()
        assert (counts["releases"], counts["offers"]) == (truth["counts"]["releases"], truth["counts"]["offers"])
        db.close()
        assert setup.counts().drained and setup.counts().failed == 1  # the 404 page only
