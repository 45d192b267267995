"""kill -9 at every named step of the write path, on both frontiers: nothing lost, nothing doubled.

Each test makes the crawler SIGKILL itself at one crash point (``recordhound/failpoints.py``),
checks that it died there (exit by SIGKILL), restarts it, and then compares the product DB
(PostgreSQL, so sequences are checked too) with the demo shop's truth field by field; ``failed``
must hold exactly the shop's fault pages and ``frontier verify`` must find nothing.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

RELEASES = 150
STORE = ("RECORDHOUND_STORE_BATCH_SIZE=20",)  # several batches, so a store crash point lands mid-crawl
POINTS = {  # crash point → the hit that kills (mid-crawl, not at the first step)
    "frontier.after_start_claim": 1,
    "spider.output_exhausted": 40,
    "frontier.before_flush": 6,
    "frontier.after_flush": 6,
    "store.after_commit": 3,
    "store.after_review": 3,
}


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
        crash_then_resume(setup, tmp_path, f"{point}=kill@{POINTS[point]}", *STORE)
        assert_crawl_matches_truth(setup, shop.truth())
    finally:
        setup.cleanup()
