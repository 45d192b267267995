"""Recrawl schedules: a following node re-checks pages as they come due (and not before), sends
conditional requests, catches the demo shop's price epochs, and loses no due page to a kill -9.
The shop's own record (``/_stats.json``: when each page was fetched, which got a 304) and its
truth are what the tests compare with; the epochs' price changes come from the demo catalog."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from recordhound.demo.catalog import Catalog
from recordhound.demo.process import ShopProcess
from recordhound.demo.truth import build_truth
from tests.integration.crawlers import CrawlSetup
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import assert_frontier_clean, assert_product_db_matches
from tests.services import PostgresDatabase, redis_url

BUNDLED = Path(__file__).parents[2] / "recordhound/sources/profiles/demo.yaml"
FOLLOW = ("RECORDHOUND_FOLLOW=true", "RECORDHOUND_PRICE_REVIEW_THRESHOLD=1000", "RECORDHOUND_FOLLOW_PROGRESS_SECONDS=2")


@pytest.fixture
def product_db() -> Iterator[str]:
    with PostgresDatabase() as database:
        yield database.url


def _profile(setup: CrawlSetup, recrawl: str) -> None:
    (setup.workdir / "profiles").mkdir(exist_ok=True)
    (setup.workdir / "profiles" / "demo.yaml").write_text(BUNDLED.read_text() + f"recrawl: {recrawl}\n")


def _product_paths(truth: dict[str, Any]) -> list[str]:
    return [offer["path"] for offer in truth["offers"]]


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:])]


def _log(setup: CrawlSetup, name: str) -> str:
    return (setup.workdir / f"{name}.log").read_text()[-4000:]


def _follow_for(setup: CrawlSetup, seconds: float, name: str) -> None:
    """A following node, stopped with SIGTERM after ``seconds``: it must exit 0."""
    node = setup.start(*FOLLOW, name=name)
    try:
        time.sleep(seconds)
        node.signal(signal.SIGTERM)
        assert node.wait(60) == 0, _log(setup, name)
    finally:
        node.ensure_stopped()


def test_a_following_node_rechecks_when_due_not_before_and_catches_every_epoch(
    tmp_path: Path, product_db: str,
) -> None:
    interval = 3.0
    with ShopProcess(40, seed=81, throttle=("--epoch-seconds", "6", "--last-epoch", "2")) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
        _profile(setup, "{product: 3s, listing: 1s, pagination: 1s}")  # listings come due first
        node = setup.start(*FOLLOW, name="follow")
        try:
            deadline = time.monotonic() + 60
            while shop.stats()["epoch"] < 2:
                assert time.monotonic() < deadline and node.process.poll() is None, _log(setup, "follow")
                time.sleep(0.2)
            time.sleep(interval + 3)  # every product page comes due once more after the last epoch
            node.signal(signal.SIGTERM)
            assert node.wait(60) == 0, _log(setup, "follow")
        finally:
            node.ensure_stopped()
        stats, truth = shop.stats(), shop.truth()
        try:
            assert truth["epoch"] == 2
            fetched = stats["fetched_at"]
            for path in _product_paths(truth):
                gaps = _gaps(fetched[path])
                assert len(gaps) >= 3, (path, fetched[path])  # re-fetched as it came due...
                assert min(gaps) >= interval * 0.95, (path, gaps)  # ...and never before
                assert max(gaps) <= interval + 3, (path, gaps)
            assert_product_db_matches(setup.database_url, truth)  # the last epoch's prices, field by field
            history = _history(setup.database_url)
            for epoch in (1, 2):  # every price change of every epoch is in offer_history
                for change in build_truth(Catalog(40, seed=81, epoch=epoch))["changed_offers"]:
                    old, new = Decimal(change["old_price"]), Decimal(change["new_price"])
                    assert (old, new) in history.get(change["external_id"], []), (epoch, change)
            assert stats["not_modified"]  # unchanged pages were answered 304
        finally:
            setup.cleanup()


def _history(database_url: str) -> dict[str, list[tuple[Decimal, Decimal]]]:
    db = ProductDb(database_url)
    try:
        found: dict[str, list[tuple[Decimal, Decimal]]] = {}
        for sku, old, new in db.rows("SELECT o.external_id, h.old_price, h.new_price FROM offer_history h "
                                     "JOIN offers o ON o.id = h.offer_id ORDER BY h.id"):
            found.setdefault(sku, []).append((Decimal(str(old)).quantize(Decimal("0.01")),
                                              Decimal(str(new)).quantize(Decimal("0.01"))))
        return found
    finally:
        db.close()


def _snapshot(database_url: str) -> dict[str, list[tuple[Any, ...]]]:
    db = ProductDb(database_url)
    try:
        return {table: [tuple(row) for row in db.rows(f"SELECT * FROM {table} ORDER BY id")]  # noqa: S608
                for table in ("releases", "offers", "offer_history", "artists", "labels", "styles")}
    finally:
        db.close()


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_a_second_pass_over_an_unchanged_shop_gets_304s_and_writes_nothing(
    kind: str, tmp_path: Path, product_db: str,
) -> None:
    with ShopProcess(40, seed=82) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
        # the third node must open before anything comes due again: process start-up on a busy machine,
        # reading robots.txt, then its frontier
        _profile(setup, "{product: 8s, listing: 8s, pagination: 8s}")
        try:
            assert setup.start(name="first").wait(300) == 0, _log(setup, "first")
            truth = shop.truth()
            assert_product_db_matches(setup.database_url, truth)
            before, stats_before = _snapshot(setup.database_url), shop.stats()
            time.sleep(8.2)  # everything comes due
            second = setup.start(name="second")
            assert second.wait(300) == 0, _log(setup, "second")
            stats = shop.stats()
            for path in _product_paths(truth):  # a conditional request, answered 304, for every product page
                assert stats["not_modified"].get(path, 0) == stats_before["not_modified"].get(path, 0) + 1, path
            assert _snapshot(setup.database_url) == before  # nothing written, not even last_seen
            assert second.stats()["recordhound/store/unchanged_pages"] >= len(truth["offers"])

            third = setup.start(name="third")  # at once: nothing is due, nothing is fetched
            assert third.wait(300) == 0, _log(setup, "third")
            assert shop.pages_served() == sum(n for p, n in stats["requests"].items()
                                              if not p.startswith("/_") and p != "/robots.txt")
            assert_frontier_clean(setup, truth)
        finally:
            setup.cleanup()


def test_kill_9_of_a_following_node_skips_no_due_page_and_fetches_none_twice_within_an_interval(
    tmp_path: Path, product_db: str,
) -> None:
    interval = 3.0
    with ShopProcess(40, seed=83) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
        _profile(setup, "{product: 3s, listing: 3s, pagination: 3s}")
        try:
            # dies when it has nothing due for the second time: after the crawl and one round of rechecks
            first = setup.start(*FOLLOW, name="first", failpoints="frontier.follow_idle=kill@2")
            assert first.wait(120) == -9, _log(setup, "first")
            killed_at = time.time()
            counts = setup.counts()
            assert counts.scheduled > 0  # the due times are stored
            time.sleep(1)
            _follow_for(setup, 2 * interval + 3, "second")
            truth, fetched = shop.truth(), shop.stats()["fetched_at"]
            for path in _product_paths(truth):
                times = fetched[path]
                gaps = _gaps(times)
                assert min(gaps) >= interval * 0.95, (path, gaps)  # none twice within an interval
                after = [t for t in times if t > killed_at]
                assert len(after) >= 2, (path, times, killed_at)  # none skipped: due ones fetched after the restart
                last_before = max(t for t in times if t <= killed_at)
                # ...as soon as due: the interval, a second of due-time granularity, and the restart of
                # a node (a process start and robots.txt read before its first lease; seconds on a busy 2-core machine)
                assert after[0] - last_before <= interval + 1 + 5, (path, times)
            assert_product_db_matches(setup.database_url, truth)
        finally:
            setup.cleanup()


def test_adaptive_intervals_revisit_the_pages_whose_prices_change_more_often(tmp_path: Path) -> None:
    from recordhound.demo.catalog import is_hot

    with ShopProcess(100, seed=84, throttle=("--epoch-seconds", "2", "--last-epoch", "30")) as shop:
        setup = CrawlSetup(tmp_path, shop.url, f"sqlite:///{tmp_path / 'product.sqlite3'}")  # embedded
        _profile(setup, "{product: 2s, listing: 1s, pagination: 1s, min: 1s, max: 8s}")
        _follow_for(setup, 24, "follow")
        fetched, truth = shop.stats()["fetched_at"], shop.truth()
        counts = {offer["external_id"]: len(fetched[offer["path"]]) for offer in truth["offers"]}
        hot = [n for sku, n in counts.items() if is_hot(84, sku)]  # the demo catalog's own list of volatile offers
        cold = [n for sku, n in counts.items() if not is_hot(84, sku)]
        assert len(hot) >= 5 and sum(hot) / len(hot) > 1.5 * sum(cold) / len(cold), (sorted(hot), sorted(cold))
        assert "Following:" in (setup.workdir / "follow.log").read_text()  # progress of the long run


def _assert_failed_only_fault_pages_and_consistent(setup: CrawlSetup, truth: dict[str, Any]) -> None:
    from recordhound.frontier.status import verify
    from tests.integration.truthcheck import FAILED_FAULTS, failed_paths

    assert failed_paths(setup) == sorted(truth["faults"][f].lstrip("/") for f in FAILED_FAULTS)
    assert verify(setup.frontier_config(), "demo") == []


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_kill_9_before_rechecks_are_written_loses_no_page_and_no_due_time(
    kind: str, tmp_path: Path, product_db: str,
) -> None:
    interval = 3.0
    with ShopProcess(40, seed=85, throttle=("--epoch-seconds", "4", "--last-epoch", "1")) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
        _profile(setup, "{product: 3s, listing: 3s, pagination: 3s}")
        try:
            # the first write of pages fetched again (with epoch 1's prices) never happens
            first = setup.start(*FOLLOW, name="first", failpoints="frontier.before_recheck_flush=kill")
            assert first.wait(120) == -9, _log(setup, "first")
            killed_at = time.time()
            _follow_for(setup, 2 * interval + 3, "second")
            truth, fetched = shop.truth(), shop.stats()["fetched_at"]
            assert truth["epoch"] == 1
            for path in _product_paths(truth):
                assert [t for t in fetched[path] if t > killed_at], path  # fetched again after the restart
            assert_product_db_matches(setup.database_url, truth)  # epoch 1's prices; IDs and sequences
            _assert_failed_only_fault_pages_and_consistent(setup, truth)
        finally:
            setup.cleanup()


def test_kill_9_after_304s_moved_last_seen_and_before_their_ack(tmp_path: Path, product_db: str) -> None:
    with ShopProcess(40, seed=86) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
        _profile(setup, "{product: 5s, listing: 5s, pagination: 5s}")
        try:
            assert setup.start(name="first").wait(300) == 0, _log(setup, "first")
            before = _snapshot(setup.database_url)
            time.sleep(5.2)
            crashed = setup.start("RECORDHOUND_LAST_SEEN_RESOLUTION_SECONDS=1", name="crashed",
                                  failpoints="store.after_touch=kill")
            assert crashed.wait(120) == -9, _log(setup, "crashed")
            again = setup.start("RECORDHOUND_LAST_SEEN_RESOLUTION_SECONDS=1", name="again")
            assert again.wait(300) == 0, _log(setup, "again")
            truth = shop.truth()
            after = _snapshot(setup.database_url)
            assert {t: rows for t, rows in after.items() if t != "offers"} == \
                {t: rows for t, rows in before.items() if t != "offers"}  # only last_seen may move
            assert_product_db_matches(setup.database_url, truth)
            _assert_failed_only_fault_pages_and_consistent(setup, truth)
            counts = setup.counts()  # rechecks may have come due since: work for the next run, not queued
            assert counts.queued == 0 and counts.leased_total == 0, counts
        finally:
            setup.cleanup()
