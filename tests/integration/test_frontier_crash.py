"""kill -9 at random moments, SIGTERM, several nodes, Redis restarted: nothing is lost."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, wait_for_pages
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

RELEASES = 2000


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopProcess]:
    with ShopProcess(RELEASES, seed=21) as running:
        yield running


@pytest.fixture
def product_db() -> Iterator[str]:
    with PostgresDatabase() as database:
        yield database.url


def _setup(kind: str, tmp_path: Path, shop: ShopProcess, database_url: str) -> CrawlSetup:
    return CrawlSetup(tmp_path, shop.url, database_url, redis_url() if kind == "redis" else "")


def _page_hits(shop: ShopProcess, before: dict[str, int]) -> dict[str, int]:
    """Requests per page since ``before`` (the module's shop serves several tests); robots.txt is
    not a page (each process reads it when it starts)."""
    now = shop.hits()
    return {path: now[path] - before.get(path, 0) for path in now
            if not path.startswith("/_") and path != "/robots.txt" and now[path] > before.get(path, 0)}


def _assert_complete(setup: CrawlSetup, shop: ShopProcess, hits: dict[str, int], context: str = "") -> None:
    """Every product page fetched; the product DB equal to the shop's truth field by field, with
    consecutive ids and sequences; ``failed`` holding only the shop's fault pages; verify clean."""
    truth = shop.truth()
    missing = [o["path"] for o in truth["offers"] if hits.get(o["path"], 0) < 1]
    assert not missing, f"{context}{len(missing)} product pages never fetched, e.g. {missing[:3]}"
    try:
        assert_crawl_matches_truth(setup, truth)
    except AssertionError as exc:
        raise AssertionError(f"{context}{exc}") from None


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_kill_9_at_random_moments_then_resume_loses_nothing(
    kind: str, tmp_path: Path, shop: ShopProcess, product_db: str
) -> None:
    setup = _setup(kind, tmp_path, shop, product_db)
    seed = int(os.environ.get("RECORDHOUND_TEST_SEED") or random.randrange(1 << 30))  # to replay a failure
    rng = random.Random(seed)
    before, in_flight, kills = shop.hits(), 0, []
    try:
        for _ in range(5):
            crawler = setup.start(name="killed")
            moment = rng.uniform(0.5, 4.0)  # from process start: some during start-up
            time.sleep(moment)
            survivors = crawler.kill()
            assert not survivors, f"the crawler's children outlived it: {survivors}"
            counts = setup.counts()
            in_flight += counts.leased_total
            kills.append((round(moment, 2), counts.leased_total, counts.done))
            if counts.drained and counts.status == "completed":
                break  # a fast machine finished the crawl between kills: a new start would re-crawl
        else:
            final = setup.start(name="final")
            assert final.wait() == 0, (tmp_path / "final.log").read_text()[-3000:]
        hits = _page_hits(shop, before)
        _assert_complete(setup, shop, hits, f"seed {seed}: kills {kills}: ")
        fetched_twice = sum(n - 1 for path, n in hits.items() if n > 1) - 1  # the 500-once page
        assert fetched_twice <= in_flight, f"seed {seed}: kills {kills}"
        counts = setup.counts()
        assert counts.drained and counts.status == "completed"
    finally:
        setup.cleanup()


def test_three_nodes_share_one_crawl_and_all_exit(tmp_path: Path, shop: ShopProcess, product_db: str) -> None:
    setup = _setup("redis", tmp_path, shop, product_db)
    before = shop.hits()
    try:
        nodes = [setup.start(name=f"node{i}") for i in range(3)]
        codes = [node.wait(300) for node in nodes]
        assert codes == [0, 0, 0], [(tmp_path / f"node{i}.log").read_text()[-2000:] for i in range(3)]
        _assert_complete(setup, shop, _page_hits(shop, before))
        pages = [node.stats().get("response_received_count", 0) for node in nodes]
        total = sum(pages)
        assert all(p >= total * 0.05 for p in pages), f"pages per node: {pages}"
        assert sum(node.stats().get("recordhound/store/offers_new", 0) for node in nodes) == \
            shop.truth()["counts"]["offers"]
        starts = [node.stats().get("recordhound/frontier/queued", 0) for node in nodes]
        assert sum(starts) == setup.counts().done + setup.counts().failed  # every request queued once
    finally:
        setup.cleanup()


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_sigterm_finishes_in_flight_work_returns_leases_and_resumes(
    kind: str, tmp_path: Path, shop: ShopProcess, product_db: str
) -> None:
    setup = _setup(kind, tmp_path, shop, product_db)
    before, served = shop.hits(), shop.pages_served()
    try:
        crawler = setup.start(name="stopped")
        wait_for_pages(shop, served + 400)
        crawler.signal(signal.SIGTERM)
        assert crawler.wait(120) == 0, (tmp_path / "stopped.log").read_text()[-3000:]
        counts = setup.counts()
        assert counts.leased == {} and counts.queued > 0, counts
        assert crawler.stats()["finish_reason"] == "shutdown"
        resumed = setup.start(name="resumed")
        assert resumed.wait() == 0
        hits = _page_hits(shop, before)
        _assert_complete(setup, shop, hits)
        assert sum(n - 1 for n in hits.values() if n > 1) <= 1  # only the 500-once page: nothing redone
    finally:
        setup.cleanup()


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_kill_9_right_after_winning_a_completed_crawl_s_reset_the_next_node_finishes_it(
    kind: str, tmp_path: Path, product_db: str
) -> None:
    """A node starting on a completed crawl wins its reset (the status ``resetting``, owned by the node) and
    dies before deleting anything (crash point ``frontier.reset_begun``). The next node waits out the
    owner's lease, takes the reset over, and crawls the shop again: every product page fetched again, the
    product DB equal to the shop's truth (IDs and PostgreSQL sequences), ``failed`` only the fault pages."""
    lease = "RECORDHOUND_FRONTIER_LEASE_SECONDS=4"
    with ShopProcess(120, seed=24) as small:
        setup = _setup(kind, tmp_path, small, product_db)
        try:
            assert setup.start(name="first").wait(300) == 0, setup.log("first")[-3000:]
            before = small.hits()
            killed = setup.start(lease, name="killed", failpoints="frontier.reset_begun=kill")
            assert killed.wait(120) == -9, setup.log("killed")[-3000:]
            assert setup.counts().status == "resetting"
            assert setup.start(lease, name="after").wait(300) == 0, setup.log("after")[-3000:]
            assert "was left unfinished; finishing it" in setup.log("after"), setup.log("after")[-3000:]
            _assert_complete(setup, small, _page_hits(small, before))
        finally:
            setup.cleanup()
