"""A private Redis with AOF, restarted in the middle of a crawl: the crawl completes, nothing lost."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, wait_for_hits
from tests.integration.dbcheck import ProductDb
from tests.services import PostgresDatabase


class PrivateRedis:
    """redis-server on a free port with its own --dir and AOF; stopped by PID."""

    def __init__(self, folder: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.folder = folder
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
             "--maxmemory-policy", "noeviction"], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                redis.Redis.from_url(self.url).ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise AssertionError("private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: Redis flushes its AOF and exits
            self.process.wait(30)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


def test_crawl_survives_a_redis_restart(tmp_path: Path, private_redis: PrivateRedis) -> None:
    with ShopProcess(1500, seed=5) as shop, PostgresDatabase() as database:
        setup = CrawlSetup(tmp_path, shop.url, database.url, private_redis.url)
        crawler = setup.start(name="crawl")
        try:
            wait_for_hits(shop, 500)
            private_redis.stop()
            time.sleep(3)  # the crawler notices, pauses and retries
            private_redis.start()
            assert crawler.wait(300) == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        finally:
            crawler.ensure_stopped()
        log = (tmp_path / "crawl.log").read_text()
        assert "Frontier backend failed" in log and "reachable again" in log
        truth, hits = shop.truth(), shop.hits()
        assert all(hits.get(o["path"], 0) >= 1 for o in truth["offers"])
        db = ProductDb(database.url)
        counts = db.counts()
        assert (counts["releases"], counts["offers"]) == (truth["counts"]["releases"], truth["counts"]["offers"])
        db.close()
        assert setup.counts().drained
