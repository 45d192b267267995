"""A Redis that answers but refuses: full (``maxmemory`` with ``noeviction``), a read-only replica, a
replica that lost its master. Each is an outage (the crawl pauses and retries), not a bug (the crawl
stops): redis-py reports them as their own classes whose message no longer starts with the error
code. Real private redis-servers; the crawl's product DB compared with the shop's truth."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from recordhound.demo.process import ShopProcess
from recordhound.frontier.backend import Entry
from recordhound.frontier.redis import RedisFrontier
from recordhound.review.docstore import RedisDocStore, ReviewStoreError
from tests.integration.crawlers import Crawler, CrawlSetup, wait_for_pages, wait_logged
from tests.integration.truthcheck import assert_crawl_matches_truth, assert_frontier_clean
from tests.redisserver import RedisServer
from tests.services import run_crawl


FP1, FP2 = bytes(range(16)), bytes(range(1, 17))  # compact fingerprints, as the scheduler makes them


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    running = RedisServer(tmp_path / "redis", "--save", "").start()
    yield running
    running.kill()


def _fill(server: RedisServer) -> None:
    """No room left: every write is refused (``noeviction``), reads still answered."""
    client = server.client()
    client.set("rh-ballast", "x" * 1_000_000)
    client.close()  # its query buffer held the ballast too: measured on a connection of its own
    client = server.client()
    client.config_set("maxmemory", str(client.info("memory")["used_memory"] - 500_000))
    client.close()


def _empty(server: RedisServer) -> None:
    client = server.client()
    client.config_set("maxmemory", "0")
    client.delete("rh-ballast")
    client.close()


def _refusal(frontier: RedisFrontier) -> Exception:
    with pytest.raises(redis.RedisError) as refused:
        frontier.commit([Entry(FP2, 0, "http://shop/2")], [], [])
    return refused.value


def test_a_full_redis_is_an_outage_for_the_frontier_and_the_review_queue(server: RedisServer) -> None:
    frontier = RedisFrontier(server.url, "rhrefuse")
    frontier.open()
    frontier.commit([Entry(FP1, 0, "http://shop/1")], [], [])
    queue = RedisDocStore(server.url, "rhrefuse")
    try:
        _fill(server)
        assert frontier.is_transient(_refusal(frontier))
        with pytest.raises(ReviewStoreError):
            queue.run(lambda txn: txn.put("review", "k", {"v": 1}))
        _empty(server)
        assert frontier.commit([Entry(FP2, 0, "http://shop/2")], [], []).queued == 1
    finally:
        queue.close()
        frontier.close()


def test_a_read_only_replica_and_one_without_its_master_are_outages(server: RedisServer, tmp_path: Path) -> None:
    replica = RedisServer(tmp_path / "replica", "--save", "", "--replica-serve-stale-data", "no").start()
    try:
        client = replica.client()
        client.replicaof("127.0.0.1", server.port)
        deadline = time.monotonic() + 30
        while client.info("replication").get("master_link_status") != "up":
            assert time.monotonic() < deadline, "the replica did not sync"
            time.sleep(0.05)
        frontier = RedisFrontier(replica.url, "rhrefuse")
        frontier.open()
        refused = _refusal(frontier)
        assert isinstance(refused, redis.ReadOnlyError) and frontier.is_transient(refused)
        server.kill()  # the master is gone: a replica that may not serve stale data answers MASTERDOWN
        deadline = time.monotonic() + 30
        while True:
            try:
                client.get("anything")
            except redis.ResponseError as exc:
                assert isinstance(exc, redis.exceptions.MasterDownError) and frontier.is_transient(exc)
                break
            assert time.monotonic() < deadline, "the replica did not notice its master left"
            time.sleep(0.1)
        frontier.close()
        client.close()
    finally:
        replica.kill()


def test_a_crawl_pointed_at_a_replica_says_so_in_one_line_and_exits_1(server: RedisServer, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica answers PING and refuses every write: before, the node waited 120 s to join and then
    called it unreachable; the start-up check now says what it is, before anything is fetched."""
    replica = RedisServer(tmp_path / "replica", "--save", "").start()
    try:
        client = replica.client()
        client.replicaof("127.0.0.1", server.port)
        client.close()
        monkeypatch.setenv("REDIS_URL", replica.url)
        result = run_crawl(tmp_path, f"sqlite:///{tmp_path / 'product.sqlite3'}", "-a", "source=demo",
                           "-a", "base_url=http://127.0.0.1:1/", timeout=60)
    finally:
        replica.kill()
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert errors == [f"error: Redis at REDIS_URL={replica.url} is a read-only replica; point REDIS_URL at "
                      "its master"], result.stderr[-2000:]


def test_a_crawl_whose_redis_fills_up_pauses_and_loses_nothing(tmp_path: Path, server: RedisServer,
                                                               database_url: str) -> None:
    """Redis refuses every write for 3 s mid-crawl (full): before, the crawl stopped with "Frontier
    error that retrying cannot fix" (exit 1); now it pauses, retries, and completes."""
    with ShopProcess(600, seed=84) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url, server.url)
        crawler = setup.start(name="crawl")
        try:
            wait_for_pages(shop, 150)
            _fill(server)
            time.sleep(3)
            _empty(server)
            assert crawler.wait(300) == 0, setup.log("crawl")[-3000:]
        finally:
            _empty(server)
            crawler.ensure_stopped()
        log = setup.log("crawl")
        assert "Frontier backend failed" in log and "cannot fix" not in log, log[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())


def test_a_graceful_stop_while_redis_is_full_waits_for_it_and_loses_nothing(tmp_path: Path, server: RedisServer,
                                                                            database_url: str) -> None:
    """Ctrl-C while Redis refuses every write (full): the node's last acks and new requests wait for
    room, the crawl closes as shut down (exit 0, no traceback) once they are written; resumed, it
    completes with the product DB matching the shop's truth."""
    with ShopProcess(600, seed=87) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url, server.url)
        crawler = setup.start(name="crawl")
        try:
            wait_for_pages(shop, 150)
            _fill(server)
            wait_logged(setup, "crawl", crawler, "Frontier backend failed")
            crawler.signal(signal.SIGINT)
            _waits_for_room_then_closes(setup, crawler, server)
        finally:
            _empty(server)
            crawler.ensure_stopped()
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())


def test_a_graceful_stop_with_no_item_waiting_while_redis_is_full_waits_for_it(tmp_path: Path,
                                                                               server: RedisServer) -> None:
    """Ctrl-C while Redis refuses writes and no item waits for it (here the store is off: the items
    are passed on, nothing stored), so the close goes straight to the frontier's write-back with acks
    and new requests to write. Before, that write was refused and raised out of the scheduler's close
    ("Scheduler close failure", a traceback; the leases left to expire, the node still registered):
    a graceful stop during an outage waited only when an item happened to wait for Redis too. Now the
    close waits for room, writes, returns its leases and leaves the crawl; resumed, the crawl
    completes with every page done and only the shop's fault pages failed."""
    with ShopProcess(60, seed=91) as shop:
        setup = CrawlSetup(tmp_path, shop.url, "sqlite:///" + str(tmp_path / "unused.sqlite3"), server.url)
        crawler = setup.start("RECORDHOUND_STORE_ENABLED=false", name="crawl",
                              failpoints="frontier.before_flush=stop@3")
        try:
            crawler.wait_frozen()  # acks and new requests in its buffer, about to be written
            _fill(server)
            crawler.signal(signal.SIGINT)  # taken when it goes on: at once, the write then refused
            crawler.signal(signal.SIGCONT)
            _waits_for_room_then_closes(setup, crawler, server)
        finally:
            _empty(server)
            crawler.ensure_stopped()
        assert setup.start("RECORDHOUND_STORE_ENABLED=false", name="resumed").wait(300) == 0, setup.log("resumed")
        assert_frontier_clean(setup, shop.truth())



def test_a_stop_during_a_close_under_way_while_redis_is_full_waits_for_that_close(tmp_path: Path,
                                                                                  server: RedisServer) -> None:
    """The crawl closes on its own (``CLOSESPIDER_TIMEOUT``) while Redis is full, its frontier's close
    waiting for room; then Ctrl-C. Before, Scrapy's stop during a close ended the crawl's task at
    once: the reactor stopped with the close cut short, exit 0 without a word, the acks and leases
    never written, the node still registered. Now the stop waits for the close under way, which
    writes once Redis has room; resumed, the crawl completes with only the shop's fault pages failed."""
    with ShopProcess(400, seed=92, throttle=("--latency", "0.1")) as shop:
        setup = CrawlSetup(tmp_path, shop.url, "sqlite:///" + str(tmp_path / "unused.sqlite3"), server.url)
        crawler = setup.start("RECORDHOUND_STORE_ENABLED=false", "CLOSESPIDER_TIMEOUT=3", name="crawl")
        try:
            wait_for_pages(shop, 20)
            _fill(server)
            wait_logged(setup, "crawl", crawler, "the frontier store does not take this node's last writes")
            crawler.signal(signal.SIGINT)
            wait_logged(setup, "crawl", crawler, "Stopping: the crawl's close under way ends first")
            _waits_for_room_then_closes(setup, crawler, server, "closespider_timeout", frontier_refused=True)
        finally:
            _empty(server)
            crawler.ensure_stopped()
        assert setup.start("RECORDHOUND_STORE_ENABLED=false", name="resumed").wait(300) == 0, setup.log("resumed")
        assert_frontier_clean(setup, shop.truth())


def _waits_for_room_then_closes(setup: CrawlSetup, crawler: Crawler, server: RedisServer,
                                reason: str = "shutdown", frontier_refused: bool = False) -> None:
    """Stopped (Ctrl-C sent) while Redis is full: the node is still there 3 s into its close (its writes
    refused), then exits 0 once Redis has room, its frontier closed as usual (acks written, leases
    returned, the node out of the crawl), no traceback."""
    wait_logged(setup, "crawl", crawler, f"Closing spider ({reason})")
    time.sleep(3)
    assert crawler.process.poll() is None, "the node left while its writes were refused"
    _empty(server)
    assert crawler.wait(120) == 0, setup.log("crawl")[-3000:]
    log = setup.log("crawl")
    assert "Traceback" not in log and "cannot fix" not in log and "Scheduler close failure" not in log, log[-3000:]
    assert f"Frontier closed ({reason})" in log, log[-3000:]
    waited = log.find(f"Closing ({reason}): the frontier store does not take")  # the frontier's own close waited
    closing = log[waited:] if waited >= 0 else ""  # (before it, the tick may recover an outage: "resuming")
    assert "; resuming" not in closing, closing[-3000:]  # the close says what it did once Redis had room
    assert not frontier_refused or "; the close is written" in closing, log[-3000:]
    backend = setup.backend()
    try:
        assert not backend.nodes() and not backend.counts().leased_total, "the node left the crawl, leases returned"
    finally:
        backend.close()
