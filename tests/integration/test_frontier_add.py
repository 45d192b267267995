"""URLs pushed into a crawl from outside (`recordhound frontier add`): queued through the crawl's
own seen-set, fetched by the node that is running (once), and a URL the crawl has seen is not
fetched again. The demo shop's own request counts are the evidence."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup
from tests.services import PostgresDatabase, redis_url

BUNDLED = Path(__file__).parents[2] / "recordhound/sources/profiles/demo.yaml"
FOLLOW = ("RECORDHOUND_FOLLOW=true", "RECORDHOUND_FOLLOW_PROGRESS_SECONDS=2")


@pytest.fixture(params=["embedded", "redis"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[CrawlSetup, ShopProcess]]:
    with PostgresDatabase() as database, ShopProcess(30, seed=23) as shop:
        crawl = CrawlSetup(tmp_path, shop.url, database.url, redis_url() if request.param == "redis" else "")
        (tmp_path / "profiles").mkdir()
        (tmp_path / "profiles" / "demo.yaml").write_text(BUNDLED.read_text() + "recrawl: {product: 1h}\n")
        try:
            yield crawl, shop
        finally:
            crawl.cleanup()


def _add(crawl: CrawlSetup, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "recordhound", "frontier", "-s", f"RECORDHOUND_REDIS_PREFIX={crawl.prefix}",
               "add", "--source", "demo", *args]
    return subprocess.run(command, cwd=crawl.workdir, env=crawl.env(), input=stdin, capture_output=True,
                          text=True, timeout=120)


def _wait(condition: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_url_added_from_outside_is_fetched_once_by_the_running_node(
        setup: tuple[CrawlSetup, ShopProcess]) -> None:
    crawl, shop = setup
    node = crawl.start(*FOLLOW, name="follow")
    try:
        truth = shop.truth()
        products = [offer["path"] for offer in truth["offers"]]
        _wait(lambda: all(shop.hits().get(p) for p in products), "the crawl did not fetch every product page")
        _wait(lambda: crawl.counts().queued == 0 and not crawl.counts().leased_total, "the crawl did not drain")
        assert node.process.poll() is None  # following: still running
        seen, new = products[0], products[1] + "?via=outside"
        added = _add(crawl, "--priority", "5", shop.url.rstrip("/") + seen, shop.url.rstrip("/") + new)
        assert added.returncode == 0, added.stderr
        assert "1 queued, 1 already seen" in added.stdout
        _wait(lambda: shop.hits().get(new) == 1, "the running node did not fetch the added URL", timeout=30)
        again = _add(crawl, stdin=shop.url.rstrip("/") + new + "\n")  # one per line on stdin
        assert again.returncode == 0 and "0 queued, 1 already seen" in again.stdout, again.stdout + again.stderr
        time.sleep(1.5)
        assert shop.hits()[seen] == 1 and shop.hits()[new] == 1  # none fetched twice
        node.signal(signal.SIGTERM)
        assert node.wait(60) == 0
    finally:
        node.ensure_stopped()


def test_frontier_add_refuses_a_url_of_another_site_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "recordhound.settings", "REDIS_URL": ""}
    done = subprocess.run([sys.executable, "-m", "recordhound", "frontier", "add", "--source", "demo", "ftp://x/y"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "http(s)" in done.stderr
