"""Issue 20, findings 2, 3, 5, 6, 7 and 8: where the frontier meets graceful stops, dead letters,
dead nodes' politeness slots, downloader middlewares that answer requests themselves, off-site
links and ``frontier verify``. Real crawler processes, real Redis (private servers where a test
needs its own), PostgreSQL or SQLite product DBs, compared with the demo shop's truth."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from recordhound.demo.catalog import Catalog
from recordhound.demo.process import ShopProcess
from recordhound.demo.truth import build_truth
from recordhound.frontier import recrawl
from recordhound.frontier.backend import Entry, Failure, FrontierBackend, Recheck
from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import crawl_prefix
from recordhound.frontier.sqlite import SqliteFrontier
from recordhound.frontier.status import reason_kind, verify
from recordhound.sources.profile import RecrawlSpec
from tests.integration.crawlers import Crawler, CrawlSetup, wait_for_pages
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import (
    assert_crawl_matches_truth, assert_product_db_matches, expected_offer, failed_paths, stored_offers)
from tests.redisserver import RedisServer
from tests.services import PostgresDatabase, redis_url, unique_prefix

BUNDLED = Path(__file__).parents[2] / "recordhound/sources/profiles/demo.yaml"
CASSETTES = Path(__file__).parents[1] / "cassettes"
MAX_ATTEMPTS = 5  # RECORDHOUND_FRONTIER_MAX_ATTEMPTS's default


@pytest.fixture
def product_db() -> Iterator[str]:
    with PostgresDatabase() as database:
        yield database.url


def _cli(setup: CrawlSetup, *args: str) -> subprocess.CompletedProcess[str]:
    prefix = ["-s", f"RECORDHOUND_REDIS_PREFIX={setup.prefix}"] if setup.redis_url else []
    return subprocess.run([sys.executable, "-m", "recordhound", "frontier", *prefix, *args],
                          cwd=setup.workdir, env=setup.env(), capture_output=True, text=True, timeout=120)


def _dead_letters(setup: CrawlSetup) -> list[dict[str, Any]]:
    listed = _cli(setup, "failed", "--source", "demo", "--json")
    assert listed.returncode == 0, listed.stderr
    letters: list[dict[str, Any]] = json.loads(listed.stdout)
    return letters


def _wrong_dead_letters(setup: CrawlSetup) -> list[tuple[str, str]]:
    """Dead letters other than the shop's fault pages (its 404 and its redirect loop; which ones
    exactly is checked by ``assert_crawl_matches_truth``)."""
    backend = setup.backend()
    try:
        letters = backend.dead_letters()
    finally:
        backend.close()
    return [(d.url, d.reason) for d in letters if reason_kind(d.reason) not in ("http_404", "redirect_loop")]


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[-1]


def _log(setup: CrawlSetup, name: str) -> str:
    return (setup.workdir / f"{name}.log").read_text()[-3000:]


def _pages(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Shop pages requested between two snapshots of its counts (control endpoints and robots.txt,
    which each process reads before its first page, left out)."""
    return {path: n - before.get(path, 0) for path, n in after.items()
            if n > before.get(path, 0) and not path.startswith("/_") and path != "/robots.txt"}


def _finish(crawler: Crawler, setup: CrawlSetup, name: str, seconds: float = 60) -> None:
    """The crawl must exit 0 within ``seconds`` (a stuck crawl is killed and fails the test)."""
    killed = crawler.wait_or_kill(seconds)
    counts = setup.counts()
    assert not killed, (f"{name}: still running after {seconds:.0f} s with {counts.queued} queued, "
                        f"{counts.leased_total} leased, {counts.done} done\n" + _log(setup, name))
    assert crawler.process.returncode == 0, _log(setup, name)


# --- finding 2: a graceful stop is not a lost lease -------------------------------------------

def test_ten_sigterm_restart_cycles_under_politeness_make_no_dead_letter(tmp_path: Path, product_db: str) -> None:
    with ShopProcess(40, seed=71) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
        # a short cycle that meets the shop's 404 fails the health check's failed share: not the point here
        polite = ("RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND=2", "RECORDHOUND_HEALTH_MAX_FAILED_SHARE=1")
        flaky = shop.truth()["faults"]["flaky"]  # 500 once, then retried: twice is right for it
        try:
            for cycle in range(10):
                before = shop.hits()
                node = setup.start(*polite, name=f"cycle{cycle}")
                try:
                    wait_for_pages(shop, shop.pages_served() + 3, timeout=60)  # most of its lease batch unfetched
                    node.signal(signal.SIGTERM)
                    code = node.wait(60)
                finally:
                    node.ensure_stopped()
                wrong = _wrong_dead_letters(setup)
                assert not wrong, f"cycle {cycle}: {len(wrong)} dead letters after graceful stops, e.g. {wrong[:3]}"
                assert code == 0, _log(setup, f"cycle{cycle}")
                twice = {p: n for p, n in _pages(before, shop.hits()).items() if n > 1 and p != flaky}
                assert not twice, f"cycle {cycle}: pages fetched more than once: {twice}"
            before = shop.hits()
            last = setup.start(*polite, name="last")  # to the end
            _finish(last, setup, "last", 180)
            twice = {p: n for p, n in _pages(before, shop.hits()).items() if n > 1 and p != flaky}
            assert not twice, f"the last run fetched pages more than once: {twice}"
            wrong = [(d["url"], d["reason"]) for d in _dead_letters(setup)  # as `frontier failed --json` lists them
                     if d["group"] not in ("http_404", "redirect_loop")]
            assert not wrong, f"{len(wrong)} dead letters after graceful stops, e.g. {wrong[:3]}"
            assert_crawl_matches_truth(setup, shop.truth())
        finally:
            setup.cleanup()


# --- finding 3: `frontier retry` revives a dead letter made of lost leases ----------------------

@pytest.mark.parametrize("kind", ["embedded", "redis"])
@pytest.mark.parametrize("point", ["spider.output_exhausted", "spider.item_settled"])
def test_a_page_that_kills_the_crawler_is_failed_alone_and_retry_revives_it(
    point: str, kind: str, tmp_path: Path, product_db: str
) -> None:
    """A product page kills the crawler every time it is parsed (``spider.output_exhausted``), or
    every time its item is stored (``spider.item_settled``: after its callback, before its ack):
    after one death in company (every page held then becomes a suspect) and four tried alone it is
    failed ("leased 5 times without an outcome"), and only it: the run that fails it finishes the
    catalog. ``frontier retry`` then puts it back and a run without the fault stores it."""
    with ShopProcess(40, seed=72) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
        poison = shop.truth()["offers"][7]["path"]
        try:
            deaths = 0
            for run in range(MAX_ATTEMPTS + 2):
                crawler = setup.start(name=f"run{run}", failpoints=f"{point}=kill@{poison}")
                code = crawler.wait(180)
                if code != -signal.SIGKILL:
                    break
                deaths += 1
            assert (deaths, code) == (MAX_ATTEMPTS, 0), _log(setup, f"run{run}")
            letters = [(_path(d["url"]), d["reason"]) for d in _dead_letters(setup)
                       if d["group"] not in ("http_404", "redirect_loop")]
            assert letters == [(poison, f"leased {MAX_ATTEMPTS} times without an outcome")], letters
            db = ProductDb(product_db)
            try:  # every offer but the poisoned page's (stored when it dies once its item is), field by field
                stored_poison = point == "spider.item_settled"
                expected = {o["external_id"]: expected_offer(o) for o in shop.truth()["offers"]
                            if o["path"] != poison or stored_poison}
                stored = stored_offers(db)
                assert sorted(stored) == sorted(expected)
                assert {sku: {k: stored[sku][k] for k in want} for sku, want in expected.items()} == expected
            finally:
                db.close()
            lost = [d for d in _dead_letters(setup) if "without an outcome" in d["reason"]]
            retried = _cli(setup, "retry", "--source", "demo", "--reason", "without an outcome")
            assert retried.returncode == 0, retried.stderr
            before = shop.hits()
            again = setup.start(name="again")
            killed = again.wait_or_kill(180)
            fetched = _pages(before, shop.hits())
            unfetched = [d["url"] for d in lost if _path(d["url"]) not in fetched]
            assert not unfetched, f"dead letters put back but never fetched: {unfetched}; " \
                f"dead letters now: {[(d['url'], d['reason']) for d in _dead_letters(setup)]}"
            assert not killed and again.process.returncode == 0, _log(setup, "again")
            assert_crawl_matches_truth(setup, shop.truth())
        finally:
            setup.cleanup()


@pytest.fixture(params=["embedded", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FrontierBackend]:
    store: FrontierBackend
    if request.param == "embedded":
        store = SqliteFrontier(str(tmp_path / "frontier.sqlite3"))
    else:
        store = RedisFrontier(redis_url(), crawl_prefix(unique_prefix(), "demo"))
    store.open()
    yield store
    store.reset()
    store.close()


def test_a_page_rechecked_many_times_then_failed_and_retried_is_leased_as_a_fresh_attempt(
    backend: FrontierBackend,
) -> None:
    """Backend level (the scheduler fails a lease whose entry's ``lost`` count reached the limit): a page kept
    on a recheck schedule and fetched 7 times, then failed once for good (a 404 while the shop was
    being rebuilt) and put back by ``frontier retry``, must not count its rechecks as lost leases."""
    spec = RecrawlSpec(intervals={"product": 1.0})
    backend.commit([Entry(b"recheck1", 0, '{"url": "http://shop/release/1"}')], [], [])
    state: dict[str, Any] = {}
    for _ in range(7):  # the first fetch and six rechecks, each acked with its next due time
        (leased,) = backend.lease("n1", 1, 60)
        _, kept = recrawl.next_state(spec, "product", state, None) or (0.0, "")
        backend.commit([], [], [], rechecks=[Recheck(leased.lease, 0.0, kept)])
        state = recrawl.load_state(kept)
        time.sleep(0.01)
    (leased,) = backend.lease("n1", 1, 60)
    attempt = json.dumps({"at": time.time(), "node": "n1", "outcome": "http_404: HTTP error response"})
    backend.commit([], [], [Failure(leased.lease, "http_404: HTTP error response", None, attempt)])
    (letter,) = backend.dead_letters()
    assert backend.requeue_failed([letter.id]) == 1
    (leased,) = backend.lease("n1", 1, 60)
    assert leased.lost == 0 < MAX_ATTEMPTS, (
        f"this entry counts {leased.lost} leases without an outcome (at {MAX_ATTEMPTS}: failed unfetched); "
        f"attempts {leased.attempts}, state {leased.state!r}")


# --- finding 5: forgetting a dead node does not scan the keyspace ------------------------------

def _holds_slot(setup: CrawlSetup, shop_url: str, node: str) -> bool:
    client = redis.Redis.from_url(setup.redis_url)
    try:
        slots = client.zrange(f"{setup.prefix}:hosts:{{{shop_url.split('/')[2]}}}:slots", 0, -1)
        return any(s.decode().rsplit("|", 1)[0].split(":", 1)[-1] == node for s in slots)  # "crawl:node|n"
    finally:
        client.close()


def test_forgetting_a_dead_node_is_quick_among_two_million_keys_and_unlists_it(
    tmp_path: Path, product_db: str,
) -> None:
    server = RedisServer(tmp_path / "redis", "--save", "", "--appendonly", "no",
                         "--slowlog-log-slower-than", "10000", "--enable-debug-command", "yes").start()
    client = server.client()
    try:
        with ShopProcess(40, seed=75, throttle=("--latency", "0.5")) as shop:
            setup = CrawlSetup(tmp_path, shop.url, product_db, server.url)
            limits = ("RECORDHOUND_POLITENESS_CONCURRENCY=3", "RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND=20")
            doomed = setup.start(*limits, "RECORDHOUND_NODE_ID=doomed", name="doomed")
            other: Crawler | None = None
            try:
                deadline = time.monotonic() + 90
                while not _holds_slot(setup, shop.url, "doomed"):
                    assert time.monotonic() < deadline and doomed.process.poll() is None, _log(setup, "doomed")
                    time.sleep(0.05)
                # the unrelated keys arrive while it runs (DEBUG POPULATE blocks Redis for a second or two)
                client.execute_command("DEBUG", "POPULATE", 2_000_000, "unrelated")
                client.slowlog_reset()
                doomed.kill()  # registered, holding leases and slots
                other = setup.start(*limits, "RECORDHOUND_NODE_ID=other", name="other")
                killed = other.wait_or_kill(180)
            finally:
                doomed.ensure_stopped()
                if other is not None:
                    other.ensure_stopped()
            slow = [(e["duration"] / 1000, e["command"][:100]) for e in client.slowlog_get(128)]
            assert not slow, f"Redis commands of 10 ms or more (ms, command): {slow}"
            assert not killed and other.process.returncode == 0, _log(setup, "other")
            status = _cli(setup, "status", "--source", "demo", "--json")
            assert status.returncode == 0, status.stderr
            (report,) = json.loads(status.stdout)
            assert "doomed" not in report["nodes"], f"the dead node is still listed: {report['nodes']}"
            assert_crawl_matches_truth(setup, shop.truth())
    finally:
        client.close()
        server.kill()


# --- finding 6: a request answered by a downloader middleware gives its politeness slot back ----

LEAKY = ("CONCURRENT_REQUESTS=2", "RECORDHOUND_POLITENESS_CONCURRENCY=2")


def test_a_cassette_replay_under_a_concurrency_limit_finishes(tmp_path: Path) -> None:
    truth = json.loads(json.dumps(build_truth(Catalog(20, seed=1))))  # what tests/cassettes/demo_20.json holds
    setup = CrawlSetup(tmp_path, "http://demo.test/", f"sqlite:///{tmp_path / 'product.sqlite3'}")
    replay = setup.start(*LEAKY, f"RECORDHOUND_CASSETTE={CASSETTES / 'demo_20.json'}", name="replay")
    _finish(replay, setup, "replay", 60)
    assert_product_db_matches(setup.database_url, truth)
    assert failed_paths(setup) == [truth["faults"]["not_found"].lstrip("/")]  # the cassette predates the loop
    counts = setup.counts()
    assert counts.drained and counts.status == "completed", counts
    assert verify(setup.frontier_config(), "demo") == []


def test_a_crawl_served_from_scrapys_http_cache_under_a_concurrency_limit_finishes(tmp_path: Path) -> None:
    cache = ("HTTPCACHE_ENABLED=True", "HTTPCACHE_IGNORE_HTTP_CODES=429,500,502,503,504",
             f"HTTPCACHE_DIR={tmp_path / 'httpcache'}")  # absolute: the crawl's folder has no scrapy.cfg
    with ShopProcess(40, seed=76) as shop:
        setup = CrawlSetup(tmp_path, shop.url, f"sqlite:///{tmp_path / 'product.sqlite3'}")
        _finish(setup.start(*LEAKY, *cache, name="live"), setup, "live", 60)
        served = shop.pages_served()
        _finish(setup.start(*LEAKY, *cache, name="cached"), setup, "cached", 60)
        assert shop.pages_served() == served  # the second crawl came from the cache
        assert_crawl_matches_truth(setup, shop.truth())


# --- finding 7: an off-site link does not dead-letter its listing page ---------------------------

def test_listing_pages_with_an_off_site_link_are_acked(tmp_path: Path) -> None:
    with ShopProcess(60, seed=77, throttle=("--offsite-links",)) as shop:
        setup = CrawlSetup(tmp_path, shop.url, f"sqlite:///{tmp_path / 'product.sqlite3'}")
        _finish(setup.start(name="crawl"), setup, "crawl", 120)
        truth = shop.truth()
        wrong = _wrong_dead_letters(setup)
        assert not wrong, f"{len(wrong)} wrong dead letters, e.g. {wrong[:3]}"
        assert_crawl_matches_truth(setup, truth)  # failed: exactly the shop's 404 and redirect loop


# --- finding 8: `frontier verify` reports no false problems -----------------------------------

@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_verify_of_a_completed_crawl_with_due_rechecks_is_clean(kind: str, tmp_path: Path) -> None:
    with ShopProcess(20, seed=78) as shop:
        setup = CrawlSetup(tmp_path, shop.url, f"sqlite:///{tmp_path / 'product.sqlite3'}",
                           redis_url() if kind == "redis" else "")
        (tmp_path / "profiles").mkdir()
        (tmp_path / "profiles" / "demo.yaml").write_text(
            BUNDLED.read_text() + "recrawl: {product: 8s, listing: 8s, pagination: 8s}\n")
        try:
            _finish(setup.start(name="crawl"), setup, "crawl", 120)
            counts = setup.counts()
            assert counts.status == "completed" and counts.scheduled, counts  # done, nothing due yet
            time.sleep(8.5)  # every page's recheck is due now
            checked = _cli(setup, "verify", "--source", "demo")
            assert checked.returncode == 0 and "demo: consistent" in checked.stdout, checked.stdout + checked.stderr
        finally:
            setup.cleanup()


def test_redis_verify_during_a_live_crawl_of_three_nodes_finds_nothing(tmp_path: Path, product_db: str) -> None:
    with ShopProcess(600, seed=79, throttle=("--latency", "0.1")) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url())
        nodes = [setup.start("CONCURRENT_REQUESTS=4", name=f"node{i}") for i in range(3)]
        try:
            wait_for_pages(shop, 20, timeout=60)
            runs, problems = 0, []
            while runs < 30 and any(node.process.poll() is None for node in nodes):
                problems += verify(setup.frontier_config(), "demo")
                runs += 1
            assert runs >= 30, f"the crawl ended after {runs} verify runs"
            assert not problems, f"verify during a live crawl: {problems[:5]}"
            assert [node.wait(300) for node in nodes] == [0, 0, 0], _log(setup, "node0")
            assert_crawl_matches_truth(setup, shop.truth())
        finally:
            for node in nodes:
                node.ensure_stopped()
            setup.cleanup()
