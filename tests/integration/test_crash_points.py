"""kill -9 at every named step of the write path, on both frontiers: nothing lost, nothing doubled.

Each test makes the crawler SIGKILL itself at one crash point (``recordhound/failpoints.py``),
checks that it died there (exit by SIGKILL), restarts it, and then compares the product DB
(PostgreSQL, so sequences are checked too) with the demo shop's truth field by field; ``failed``
must hold exactly the shop's fault pages and ``frontier verify`` must find nothing. On the Redis
frontier the crawls are polite (``POLITE``: two slots per host, held in Redis) and, after the resume,
no slot is left held: the killed node's slots in flight are freed when the same node id joins again,
and the download timeout is long enough (a slot expires after it) that a slot left would stall the
resumed crawl past its time limit instead of expiring unseen.

The same while the crawl is paused by back-pressure (``store.backpressure_paused``: items wait
for a product store made slow on purpose): killed there, it resumes with a normal store; stopped
gracefully there (SIGTERM or SIGINT, once), it writes what waits, exits 0 with every lease acked or
returned, and the next run completes the catalog.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import Crawler, CrawlSetup
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

RELEASES = 150
STORE = ("RECORDHOUND_STORE_BATCH_SIZE=20",)  # several batches, so a store crash point lands mid-crawl
POINTS = {  # crash point → the hit that kills (mid-crawl, not at the first step)
    "frontier.joining": 1,  # reached the store, not registered: the restart is a plain start
    "frontier.after_start_claim": 1,
    "spider.output_exhausted": 40,
    "spider.item_settled": 40,
    "frontier.before_flush": 6,
    "frontier.after_flush": 6,
    "store.before_commit": 3,
    "store.after_commit": 3,
    "store.after_review": 3,
}
SLOW_STORE = (  # 50 items/s, several times slower than the crawl: it pauses for back-pressure again and again
    "RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS=0.02", "RECORDHOUND_STORE_MAX_WAITING_ITEMS=40",
    "CONCURRENT_REQUESTS=16", "CONCURRENT_REQUESTS_PER_DOMAIN=16")
PAUSED = "store.backpressure_paused=%s@3"  # the third pause: batches stored and acked under back-pressure before it
POLITE = ("RECORDHOUND_POLITENESS_CONCURRENCY=2", "DOWNLOAD_TIMEOUT=300")  # a slot expires 305 s after it was taken


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopProcess]:
    with ShopProcess(RELEASES, seed=41) as running:
        yield running


@pytest.fixture
def product_db() -> Iterator[str]:
    with PostgresDatabase() as database:
        yield database.url


def crash_then_resume(setup: CrawlSetup, tmp_path: Path, failpoint: str, *settings: str) -> None:
    crashed = setup.start(*settings, name="crashed", failpoints=failpoint)
    code = crashed.wait(180)
    assert code == -signal.SIGKILL, f"did not die at {failpoint} (exit {code}):\n" + \
        (tmp_path / "crashed.log").read_text()[-3000:]
    resumed = setup.start(*settings, name="resumed")
    assert resumed.wait(300) == 0, (tmp_path / "resumed.log").read_text()[-3000:]


@pytest.mark.parametrize("kind", ["embedded", "redis"])
@pytest.mark.parametrize("point", sorted(POINTS))
def test_kill_at_crash_point_then_resume_matches_the_truth(
    point: str, kind: str, tmp_path: Path, shop: ShopProcess, product_db: str,
) -> None:
    setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
    try:
        crash_then_resume(setup, tmp_path, f"{point}=kill@{POINTS[point]}", *STORE,
                          *(POLITE if kind == "redis" else ()))
        assert_crawl_matches_truth(setup, shop.truth())
        if kind == "redis":
            assert setup.slots_held() == {}, "politeness slots left held after the resumed crawl"
    finally:
        setup.cleanup()


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_kill_while_paused_for_a_slow_store_then_resume_without_it_matches_the_truth(
    kind: str, tmp_path: Path, shop: ShopProcess, product_db: str,
) -> None:
    setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
    crashed = setup.start(*STORE, *SLOW_STORE, name="crashed", failpoints=PAUSED % "kill")
    resumed: Crawler | None = None
    try:
        code = crashed.wait(180)
        assert code == -signal.SIGKILL, f"did not die paused (exit {code}):\n" + \
            (tmp_path / "crashed.log").read_text()[-3000:]
        assert setup.counts().leased_total > 0  # the pages whose items waited for the store died unacked
        resumed = setup.start(*STORE, name="resumed")  # a store at its normal pace
        assert resumed.wait(300) == 0, (tmp_path / "resumed.log").read_text()[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())
    finally:
        for process in (crashed, resumed):
            if process is not None:
                process.ensure_stopped()
        setup.cleanup()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_graceful_stop_while_paused_for_a_slow_store_writes_what_waits_then_resume_matches_the_truth(
    kind: str, signum: int, tmp_path: Path, shop: ShopProcess, product_db: str,
) -> None:
    setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
    stopped = setup.start(*STORE, *SLOW_STORE, name="stopped", failpoints=PAUSED % "stop")
    resumed: Crawler | None = None
    try:
        stopped.wait_frozen()  # frozen in the pause; the signal lands the moment it runs again
        stopped.signal(signum)
        stopped.signal(signal.SIGCONT)
        assert stopped.wait(120) == 0, (tmp_path / "stopped.log").read_text()[-3000:]
        stats = stopped.stats()
        assert stats["finish_reason"] == "shutdown" and stats["recordhound/backpressure/pauses"] >= 3, stats
        # every item that waited for the store was written (an item counts as scraped once committed)
        assert stats["item_scraped_count"] == stats["recordhound/store/items"], stats
        assert not stats.get("log_count/ERROR"), (tmp_path / "stopped.log").read_text()[-3000:]
        counts = setup.counts()
        assert counts.leased_total == 0 and counts.queued > 0, counts  # stored work acked, the rest returned
        resumed = setup.start(*STORE, name="resumed")
        assert resumed.wait(300) == 0, (tmp_path / "resumed.log").read_text()[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())
    finally:
        for process in (stopped, resumed):
            if process is not None:
                process.ensure_stopped()
        setup.cleanup()
