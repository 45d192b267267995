"""One contract, two backends: the same tests run on the embedded (SQLite) and Redis frontier."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.frontier.backend import Entry, Failure, FrontierBackend, NodeInfo
from recordhound.frontier.redis import RedisFrontier
from recordhound.frontier.sqlite import SqliteFrontier
from tests.services import redis_url, unique_prefix


@pytest.fixture(params=["embedded", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FrontierBackend]:
    if request.param == "embedded":
        store: FrontierBackend = SqliteFrontier(str(tmp_path / "frontier.sqlite3"))
    else:
        store = RedisFrontier(redis_url(), f"{unique_prefix()}:demo")
    store.open()
    yield store
    store.reset()
    store.close()


def fp(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()[:8]


def entry(url: str, priority: int = 0, dedupe: bool = True) -> Entry:
    return Entry(fp(url) if dedupe else None, priority, url)


def test_seen_and_queued_in_one_step_duplicates_dropped(backend: FrontierBackend) -> None:
    assert backend.commit([entry("a"), entry("b"), entry("a")], [], []) == 2
    assert backend.commit([entry("a"), entry("c")], [], []) == 1
    assert backend.commit([entry("a", dedupe=False)], [], []) == 1  # dont_filter
    counts = backend.counts()
    assert (counts.queued, counts.seen) == (4, 3)
    assert backend.is_seen(fp("b")) and not backend.is_seen(fp("zzz"))


def test_priority_first_then_fifo_without_collapsing_identical_payloads(backend: FrontierBackend) -> None:
    backend.commit([entry("p1"), entry("l1", 20), entry("p2"), entry("x", 30), entry("l2", 20),
                    entry("same", 5, dedupe=False), entry("same", 5, dedupe=False)], [], [])
    leased = [backend.lease("n1", 3, 60), backend.lease("n1", 10, 60)]
    assert [x.payload for batch in leased for x in batch] == ["x", "l1", "l2", "same", "same", "p1", "p2"]


def test_lease_ack_fail_and_counts(backend: FrontierBackend) -> None:
    backend.commit([entry(u) for u in "abcd"], [], [])
    a, b, c = backend.lease("n1", 3, 60)
    assert backend.counts().leased == {"n1": 3}
    backend.commit([entry("e")], [a.id], [Failure(b.id, "HTTP 404")])
    counts = backend.counts()
    assert (counts.queued, counts.leased, counts.done, counts.failed) == (2, {"n1": 1}, 1, 1)
    assert backend.failures() == [("b", "HTTP 404")]
    backend.commit([], [a.id], [Failure(a.id, "late")])  # a second ack/fail of one entry is ignored
    assert (backend.counts().done, backend.counts().failed) == (1, 1)
    backend.release([c.id])
    assert backend.counts().drained is False and backend.counts().queued == 3


def test_leases_return_on_expiry_and_on_node_restart(backend: FrontierBackend) -> None:
    backend.commit([entry(u) for u in "abc"], [], [])
    first = backend.lease("dead", 1, 0.2)
    backend.lease("alive", 1, 60)
    backend.lease("restarted", 1, 60)
    assert backend.reclaim_expired() == 0
    time.sleep(0.3)
    assert backend.reclaim_expired() == 1
    assert backend.reclaim_node("restarted") == 1
    again = backend.lease("other", 5, 60)
    assert sorted(x.payload for x in again) == ["a", "c"]
    assert next(x for x in again if x.payload == first[0].payload).attempts == 2
    backend.renew("other", 0.1)
    time.sleep(0.2)
    assert backend.reclaim_expired() == 2


def test_start_claimed_once_and_node_ids(backend: FrontierBackend) -> None:
    assert backend.claim_start() is True
    assert backend.claim_start() is False
    info = NodeInfo("host", 123, "tok1", 0.0)
    assert backend.claim_node("host-1", info, None)
    assert not backend.claim_node("host-1", NodeInfo("host", 456, "tok2", 0.0), None)
    assert backend.claim_node("host-1", NodeInfo("host", 456, "tok2", 0.0), "tok1")  # dead holder replaced
    assert backend.heartbeat("host-1", "tok2") and not backend.heartbeat("host-1", "tok1")
    assert backend.nodes()["host-1"].pid == 456
    backend.leave("host-1", "tok2")
    assert backend.nodes() == {}


def test_reset_forgets_the_crawl(backend: FrontierBackend) -> None:
    backend.commit([entry("a")], [], [])
    backend.set_status("completed")
    backend.reset()
    counts = backend.counts()
    assert (counts.queued, counts.seen, counts.status) == (0, 0, "new")
    assert backend.commit([entry("a")], [], []) == 1


def test_leased_ids_by_node(backend: FrontierBackend) -> None:
    backend.commit([entry(u) for u in "abc"], [], [])
    mine = backend.lease("n1", 2, 60)
    backend.lease("n2", 1, 60)
    assert sorted(backend.leased_ids("n1")) == sorted(x.id for x in mine)
    backend.commit([], [mine[0].id], [])
    assert backend.leased_ids("n1") == [mine[1].id]
