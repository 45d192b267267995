"""One contract, two backends: the same tests run on the embedded (SQLite) and Redis frontier."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.frontier.backend import (
    FAILED, QUEUED, Entry, Failure, FrontierBackend, Lease, NodeInfo, Recheck, Reconciled)
from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import crawl_prefix
from recordhound.frontier.sqlite import SqliteFrontier
from tests.services import redis_url, unique_prefix


@pytest.fixture(params=["embedded", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FrontierBackend]:
    if request.param == "embedded":
        store: FrontierBackend = SqliteFrontier(str(tmp_path / "frontier.sqlite3"))
    else:
        store = RedisFrontier(redis_url(), crawl_prefix(unique_prefix(), "demo"))
    store.open()
    yield store
    store.reset()
    store.close()


def fp(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()[:8]


def entry(url: str, priority: int = 0, dedupe: bool = True) -> Entry:
    return Entry(fp(url) if dedupe else None, priority, url)


def test_seen_and_queued_in_one_step_duplicates_dropped(backend: FrontierBackend) -> None:
    assert backend.commit([entry("a"), entry("b"), entry("a")], [], []).queued == 2
    assert backend.commit([entry("a"), entry("c")], [], []).queued == 1
    assert backend.commit([entry("a", dedupe=False)], [], []).queued == 1  # dont_filter
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
    backend.commit([entry("e")], [a.lease], [Failure(b.lease, "HTTP 404")])
    counts = backend.counts()
    assert (counts.queued, counts.leased, counts.done, counts.failed) == (2, {"n1": 1}, 1, 1)
    assert backend.failures() == [("b", "HTTP 404")]
    late = backend.commit([], [a.lease], [Failure(a.lease, "late")])  # a second ack/fail is refused
    assert late.refused == 2 and (backend.counts().done, backend.counts().failed) == (1, 1)
    assert backend.release([c.lease]) == 1
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
    returned = next(x for x in again if x.payload == first[0].payload)
    assert returned.attempts == 2 and returned.lost == 1  # an expired lease counts as lost
    assert backend.renew("other", [x.lease for x in again], 0.1) == []
    time.sleep(0.2)
    assert backend.reclaim_expired() == 2


def test_start_claim_is_compare_and_set_and_seeded_comes_with_the_start_requests(
    backend: FrontierBackend,
) -> None:
    assert backend.claim_start("tokA", "") is True
    assert backend.claim_start("tokB", "") is False  # A holds it
    assert backend.counts().start_claim == "tokA"
    assert backend.claim_start("tokB", "tokA") is True  # A died: B takes it over, once
    assert backend.claim_start("tokC", "tokA") is False
    assert not backend.counts().seeded and not backend.counts().drained  # empty, but not seeded
    backend.commit([entry("start")], [], [], seeded=True)
    (start,) = backend.lease("n1", 1, 60)
    backend.commit([], [start.lease], [])
    counts = backend.counts()
    assert counts.seeded and counts.drained
    assert backend.claim_start("tokB", "tokB") is False  # seeded: nobody writes them again


def test_reset_of_a_completed_crawl_is_won_by_one_node(backend: FrontierBackend) -> None:
    backend.set_status("completed")
    assert backend.begin_reset("completed") is True
    assert backend.begin_reset("completed") is False
    assert backend.counts().status == "resetting"
    backend.reset()
    assert backend.counts().status == "new"


def test_leases_are_fenced_a_stale_holder_is_refused(backend: FrontierBackend) -> None:
    backend.commit([entry(u) for u in "ab"], [], [])
    (stale,) = backend.lease("frozen", 1, 0.1)
    time.sleep(0.2)
    assert backend.reclaim_expired() == 1
    (current,) = backend.lease("other", 1, 60)
    assert current.id == stale.id and current.lease != stale.lease
    assert backend.renew("frozen", [stale.lease], 60) == [stale.lease]  # renews nothing of the other node's
    assert backend.release([stale.lease]) == 0
    assert backend.commit([], [stale.lease], [Failure(stale.lease, "late")]).refused == 2
    assert backend.counts().leased == {"other": 1}
    assert backend.commit([], [current.lease], []).refused == 0
    assert backend.counts().done == 1


def test_node_ids(backend: FrontierBackend) -> None:
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
    assert backend.commit([entry("a")], [], []).queued == 1
    assert backend.verify() == []  # a reset crawl adds up from zero again


def test_leases_by_node(backend: FrontierBackend) -> None:
    backend.commit([entry(u) for u in "abc"], [], [])
    mine = backend.lease("n1", 2, 60)
    backend.lease("n2", 1, 60)
    assert sorted(x.id for x in backend.leases_of("n1")) == sorted(x.id for x in mine)
    backend.commit([], [mine[0].lease], [])
    assert backend.leases_of("n1") == [mine[1].lease]


def test_the_renewer_thread_keeps_leases_alive_while_the_caller_is_busy(
    backend: FrontierBackend, tmp_path: Path,
) -> None:
    from recordhound.frontier.renewer import Renewer

    backend.commit([entry(u) for u in "ab"], [], [])
    backend.claim_node("busy", NodeInfo("host", 1, "tok", 0.0), None)
    held = backend.lease("busy", 2, 0.4)
    second = _reopen(backend, tmp_path)
    renewer = Renewer(lambda: second, "busy", "tok", 0.4)
    renewer.held = [x.lease for x in held]
    renewer.start()
    try:
        time.sleep(1.5)  # the caller's thread is busy for almost four lease times
        assert backend.reclaim_expired() == 0 and backend.counts().leased == {"busy": 2}
    finally:
        renewer.stop()
    time.sleep(0.5)
    assert backend.reclaim_expired() == 2  # without the renewer they expire
    assert backend.release([x.lease for x in held]) == 0  # and the old leases are fenced off


def test_a_renewer_round_registers_its_node_again_unless_told_to_stop(backend: FrontierBackend) -> None:
    """The store lost the node's registration (a Redis restored from an older snapshot): the renewer's
    next round registers it again. Once the node leaves the crawl at its close (the renewer told to stop
    first), a round still running must not: the node would stay registered after it left."""
    from recordhound.frontier.renewer import Renewer
    from recordhound.frontier.nodes import this_process

    renewer = Renewer(lambda: backend, "n1", "tok", 30.0)
    assert backend.claim_node("n1", this_process("tok"), None)
    backend.leave("n1", "tok")  # lost by the store
    renewer.renew(backend)
    assert list(backend.nodes()) == ["n1"] and not renewer.taken
    backend.leave("n1", "tok")  # the node's own leave, its renewer told to stop before (Upkeep.stop)
    renewer._stop.set()
    renewer.renew(backend)  # a round that was under way
    assert backend.nodes() == {}


def _reopen(backend: FrontierBackend, tmp_path: Path) -> FrontierBackend:
    """A second connection to the same frontier (the renewer has its own)."""
    if isinstance(backend, SqliteFrontier):
        other: FrontierBackend = SqliteFrontier(backend.path)
    else:
        assert isinstance(backend, RedisFrontier)
        other = RedisFrontier(backend.url, backend.prefix)
    other.open()
    return other


def test_a_call_on_the_reactor_waits_a_bounded_time_then_counts_as_an_outage(
    backend: FrontierBackend, tmp_path: Path,
) -> None:
    backend.limit_wait(0.2)
    assert backend.commit([entry("a")], [], []).queued == 1  # a new client, or the same file, works
    if not isinstance(backend, SqliteFrontier):
        return  # Redis: the socket timeout is the bound (a frozen Redis is in test_redis_restart.py)
    import sqlite3

    holder = sqlite3.connect(backend.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError) as raised:
        backend.commit([entry("b")], [], [])
    holder.execute("ROLLBACK")
    holder.close()
    assert time.monotonic() - started < 2 and backend.is_transient(raised.value)
    assert backend.commit([entry("b")], [], []).queued == 1


def attempt(outcome: str) -> str:
    return json.dumps({"at": time.time(), "node": "n1", "outcome": outcome})


def test_a_retry_waits_its_backoff_in_the_store_keeps_its_place_and_history(backend: FrontierBackend) -> None:
    backend.commit([entry("r", 5), entry("other")], [], [])
    (r,) = backend.lease("n1", 1, 60)
    assert r.payload == "r" and (r.lost, r.tries) == (0, 0)
    committed = backend.commit([], [], [Failure(r.lease, "http_503", retry_in=0.6, attempt=attempt("http_503"))])
    assert committed.refused == 0
    counts = backend.counts()
    assert (counts.queued, counts.waiting, counts.failed) == (2, 1, 0) and not counts.drained
    assert [x.payload for x in backend.lease("n1", 5, 60)] == ["other"]  # not before its time
    assert backend.lease("n2", 5, 60) == []
    time.sleep(0.7)
    (again,) = backend.lease("n2", 5, 60)  # another node may take the retry
    assert (again.payload, again.attempts, again.lost, again.tries) == ("r", 2, 0, 1)
    assert backend.commit([], [], [Failure(r.lease, "late", retry_in=0)]).refused == 1  # fenced
    backend.commit([], [again.lease], [])
    assert backend.counts().done == 1 and backend.verify() == []


def test_dead_letters_keep_reason_and_history_and_go_back_on_request(backend: FrontierBackend) -> None:
    backend.commit([entry("gone", 7), entry("ok")], [], [], seeded=True)
    gone, ok = backend.lease("n1", 2, 60)
    backend.commit([], [], [Failure(gone.lease, "http_503", retry_in=0, attempt=attempt("http_503"))])
    (gone,) = backend.lease("n1", 1, 60)
    backend.commit([], [ok.lease], [Failure(gone.lease, "http_503: after 2 attempts", attempt=attempt("http_503"))])
    backend.set_status("completed")
    (letter,) = backend.dead_letters()
    assert (letter.payload, letter.reason, letter.priority) == ("gone", "http_503: after 2 attempts", 7)
    assert [h["outcome"] for h in letter.history] == ["http_503", "http_503"]
    assert backend.verify() == []
    assert backend.requeue_failed([letter.id, 999]) == 1
    counts = backend.counts()
    assert (counts.queued, counts.failed, counts.status, counts.drained) == (1, 0, "running", False)
    (back,) = backend.lease("n2", 5, 60)
    assert (back.id, back.payload, back.lost, back.tries) == (letter.id, "gone", 0, 0)
    assert back.attempts == 3  # the fencing token only grows
    backend.commit([], [back.lease], [])
    assert backend.dead_letters() == [] and backend.verify() == []


def test_a_recheck_is_done_until_due_then_leased_again_with_its_state(backend: FrontierBackend) -> None:
    from recordhound.frontier.backend import Recheck

    backend.commit([entry("product", 10), entry("listing", 20), entry("gone")], [], [], seeded=True)
    listing, product, gone = backend.lease("n1", 3, 60)
    state = json.dumps({"interval": 0.6, "etag": '"abc"'})
    committed = backend.commit([], [gone.lease], [], rechecks=[Recheck(product.lease, 0.6, state),
                                                               Recheck(listing.lease, 60, "{}")])
    assert committed.refused == 0
    counts = backend.counts()
    assert (counts.queued, counts.done, counts.scheduled, counts.due_within_hour) == (0, 3, 2, 2)
    assert counts.drained and backend.verify() == []  # nothing due: a run without follow may end
    assert backend.lease("n1", 5, 60) == []
    time.sleep(0.7)
    counts = backend.counts()
    assert (counts.queued, counts.due, counts.done, counts.scheduled, counts.drained) == (0, 1, 2, 1, False)  # due: to do again
    (again,) = backend.lease("n2", 5, 60)
    assert (again.id, again.payload, again.state, again.attempts) == (product.id, "product", state, 2)
    assert backend.verify() == []
    backend.commit([], [again.lease], [])  # acked without a recheck: done for good
    counts = backend.counts()
    assert (counts.queued, counts.done, counts.scheduled) == (0, 3, 1) and backend.verify() == []
    stale = backend.commit([], [], [], rechecks=[Recheck(again.lease, 1, "{}")])
    assert stale.refused == 1  # fenced like any ack


def test_only_expired_leases_count_as_lost_and_a_requeue_or_recheck_starts_again(backend: FrontierBackend) -> None:
    backend.commit([entry("a"), entry("b")], [], [])
    backend.lease("n1", 2, 60)
    assert backend.reclaim_node("n1") == 2  # the node restarted: each lease lost once
    a, b = backend.lease("n1", 2, 60)
    assert (a.lost, b.lost) == (1, 1)
    assert backend.release([a.lease, b.lease]) == 2  # a graceful return counts nothing
    a, b = backend.lease("n1", 2, 0.1)
    assert (a.lost, b.lost) == (1, 1)
    backend.try_alone("n1", a.lease)
    time.sleep(0.2)
    assert backend.reclaim_expired() == 2  # expired: the one tried alone lost once more
    assert {i: s.lost for i, s in backend.states().items()} == {a.id: 2, b.id: 1}
    a, b = backend.lease("n1", 2, 60)
    assert (a.lost, b.lost) == (2, 1)
    backend.commit([], [], [Failure(a.lease, "gone")], rechecks=[Recheck(b.lease, 0, "{}")])
    assert backend.requeue_failed([a.id]) == 1
    assert [(x.id, x.lost) for x in backend.lease("n2", 2, 60)] == [(a.id, 0), (b.id, 0)]
    assert backend.verify() == []


def test_a_death_counts_against_the_page_tried_alone_not_the_others_held(backend: FrontierBackend) -> None:
    """A node dies holding pages: each becomes a suspect (lost 1). From then on a death counts
    against a page only while its process was trying that page alone (``try_alone``): five deaths
    of a node that held ``b`` and ``c`` but was trying ``a`` fail ``a``, never its neighbours."""
    backend.commit([entry("a"), entry("b"), entry("c")], [], [])
    for death in range(5):
        a, b, c = backend.lease("n1", 3, 60)
        assert (a.lost, b.lost, c.lost) == (death, min(death, 1), min(death, 1))
        if death:
            backend.try_alone("n1", a.lease)
        assert backend.reclaim_node("n1") == 3
    a, b, c = backend.lease("n1", 3, 60)
    assert (a.lost, b.lost, c.lost) == (5, 1, 1)
    backend.try_alone("n1", b.lease)
    backend.try_alone("n1", None)  # the try ended (the page was parsed): a death now is nobody's fault
    assert backend.reclaim_node("n1") == 3
    assert [x.lost for x in backend.lease("n1", 3, 60)] == [5, 1, 1]
    backend.try_alone("n2", Lease(b.id, b.token))  # a mark naming a lease that ended (b was leased again)
    backend.try_alone("n1", Lease(b.id, b.token))
    assert backend.reclaim_node("n1") == 3
    assert [x.lost for x in backend.lease("n1", 3, 60)] == [5, 1, 1]
    assert backend.verify() == []


def test_a_lease_of_fresh_pages_only_leaves_the_suspects_queued_in_their_place(backend: FrontierBackend) -> None:
    """A node trying a suspect asks for fresh pages only (``fresh_only``): the suspects ahead of them
    in the queue (here more than one page of the Redis script's scan) stay there, in their order, for
    a lease that takes them (this node's next, or another node's)."""
    urls = [f"p{n}" for n in range(260)]
    backend.commit([entry(u) for u in urls], [], [])
    for _ in range(4):
        backend.lease("n1", 64, 60)
    assert backend.reclaim_node("n1") == 256  # p0..p255: suspects, ahead of p256..p259
    assert [x.payload for x in backend.lease("n2", 3, 60, fresh_only=True)] == urls[256:259]
    assert [(x.payload, x.lost) for x in backend.lease("n2", 3, 60, fresh_only=True)] == [(urls[259], 0)]
    assert backend.lease("n2", 3, 60, fresh_only=True) == []
    assert [(x.payload, x.lost) for x in backend.lease("n3", 3, 60)] == [(u, 1) for u in urls[:3]]
    assert backend.counts().queued == 253 and backend.verify() == []


def test_reconcile_releases_what_the_process_does_not_hold_and_names_what_the_store_lost(
    backend: FrontierBackend,
) -> None:
    backend.commit([entry(u) for u in "abc"], [], [])
    (old,) = backend.lease("n1", 1, 0.1)
    time.sleep(0.2)
    assert backend.reclaim_expired() == 1
    (taken,) = backend.lease("n2", 1, 60)  # the entry of n1's stalled lease, now n2's
    b, c = backend.lease("n1", 2, 60)  # n1's process got b, but the reply with c was lost
    result = backend.reconcile("n1", [old.lease, b.lease])
    assert result == Reconciled(1, [old.lease])  # c released, the stalled lease named
    states = backend.states()
    assert (states[c.id].state, states[c.id].lost) == (QUEUED, 0)  # released: no lost count
    assert (states[taken.id].owner, states[taken.id].token) == ("n2", taken.token)  # not n1's to release
    assert backend.counts().leased == {"n1": 1, "n2": 1}
    assert backend.release([c.lease]) == 0  # fenced off
    assert backend.reconcile("n1", [b.lease]) == Reconciled(0, [])
    assert backend.reconcile("n1", [taken.lease]) == Reconciled(1, [taken.lease])  # another node's lease
    assert backend.counts().leased == {"n2": 1} and backend.verify() == []


def test_renew_extends_current_leases_and_returns_those_no_longer_current(backend: FrontierBackend) -> None:
    backend.commit([entry(u) for u in "abcd"], [], [])
    (old,) = backend.lease("n1", 1, 0.1)
    time.sleep(0.2)
    assert backend.reclaim_expired() == 1
    (taken,) = backend.lease("n2", 1, 60)  # the entry of n1's stalled lease, now n2's
    b, c, d = backend.lease("n1", 3, 0.3)
    backend.commit([], [c.lease], [])  # acked: ended
    renewed = backend.renew("n1", [old.lease, b.lease, c.lease, taken.lease], 60)
    assert renewed == [old.lease, c.lease, taken.lease]
    time.sleep(0.4)
    assert backend.reclaim_expired() == 1  # d (not renewed) expired, b did not
    assert backend.counts().leased == {"n1": 1, "n2": 1} and backend.leases_of("n1") == [b.lease]


# Regressions found by tests/integration/test_frontier_stateful.py (the shrunk sequences).


def test_a_retry_whose_time_has_come_is_queued_not_waiting(backend: FrontierBackend) -> None:
    backend.commit([entry("a")], [], [], seeded=True)
    (a,) = backend.lease("n1", 1, 60)
    backend.commit([], [], [Failure(a.lease, "http_503", retry_in=0, attempt=attempt("http_503"))])
    counts = backend.counts()  # Redis counted every retry in P:delayed as waiting, due or not
    assert (counts.queued, counts.waiting, counts.drained) == (1, 0, False)
    backend.commit([], [], [Failure(backend.lease("n1", 1, 60)[0].lease, "http_503", retry_in=3600)])
    assert (backend.counts().queued, backend.counts().waiting) == (1, 1)


def test_renew_and_reconcile_tell_a_stale_and_the_current_lease_of_one_entry_apart(
    backend: FrontierBackend,
) -> None:
    backend.commit([entry("a")], [], [])
    (stale,) = backend.lease("n1", 1, 0.1)
    time.sleep(0.2)
    assert backend.reclaim_expired() == 1
    (current,) = backend.lease("n1", 1, 60)  # the same node leases the same entry again
    assert backend.renew("n1", [current.lease, stale.lease], 60) == [stale.lease]
    assert backend.reconcile("n1", [stale.lease, current.lease]) == Reconciled(0, [stale.lease])
    assert backend.leases_of("n1") == [current.lease]  # Redis compared by id: it released this one


def test_a_lease_named_twice_in_one_commit_takes_the_first_outcome_in_ack_fail_recheck_order(
    backend: FrontierBackend,
) -> None:
    backend.commit([entry("a"), entry("b")], [], [])
    a, b = backend.lease("n1", 2, 60)
    committed = backend.commit([], [b.lease], [Failure(a.lease, "gone"), Failure(b.lease, "late")],
                               rechecks=[Recheck(a.lease, 3600, "{}")])
    assert committed.refused == 2  # SQLite used to take the recheck of a, Redis its failure
    states = backend.states()
    assert list(states) == [a.id] and states[a.id].state == FAILED
    assert backend.verify() == []


def test_only_the_registered_process_of_a_node_may_reconcile_it(backend: FrontierBackend) -> None:
    """A process that stalled past its lease time, whose node id another process took over, must
    not release the new holder's leases when it wakes (review finding)."""
    backend.commit([entry(u) for u in "abc"], [], [])
    assert backend.claim_node("n1", NodeInfo("host", 1, "tokA", 0.0), None)
    stale = backend.lease("n1", 3, 60)
    assert backend.claim_node("n1", NodeInfo("host", 2, "tokB", 0.0), "tokA")  # A looked dead: B took n1
    backend.reclaim_node("n1")
    current = backend.lease("n1", 3, 60)
    result = backend.reconcile("n1", [x.lease for x in stale], "tokA")
    assert result.taken and result.released == 0
    assert backend.counts().leased == {"n1": 3}
    assert backend.renew("n1", [x.lease for x in current], 60) == []  # B's leases are untouched
    assert not backend.reconcile("n1", [x.lease for x in current], "tokB").taken


def test_a_store_that_lost_a_writers_commits_applies_nothing_until_told(backend: FrontierBackend) -> None:
    """A node counts its commits; a store that counts fewer (restored from an older snapshot) refuses
    the next commit, so no ack lands before the node re-sent what the store lost."""
    first = backend.commit([entry("a")], [], [], writer="n1", floor=0)
    assert (first.writes, first.regressed) == (1, False)
    (a,) = backend.lease("n1", 1, 60)
    refused = backend.commit([entry("child")], [a.lease], [], writer="n1", floor=5)
    assert refused.regressed and refused.writes == 1
    assert backend.counts().leased == {"n1": 1} and not backend.is_seen(fp("child"))  # nothing applied
    again = backend.commit([entry("child")], [a.lease], [], writer="n1", floor=refused.writes)
    assert not again.regressed and again.writes == 2 and backend.counts().done == 1
    assert backend.verify() == []


@pytest.mark.parametrize("scheduled", [False, True], ids=["nothing_scheduled", "rechecks_scheduled"])
def test_a_completed_crawl_whose_profile_gains_a_recrawl_schedule_starts_anew(backend: FrontierBackend,
                                                                            scheduled: bool) -> None:
    """Completed without rechecks (its profile had no ``recrawl:``), then started with one: nothing is
    scheduled to come due, so the crawl starts anew (before, it stayed completed for good: every run
    found nothing due). With rechecks scheduled it stays as it is: the next run fetches what is due."""
    from recordhound.frontier.lifecycle import reset_if_completed

    backend.commit([entry("a"), entry("b")], [], [])
    a, b = backend.lease("n1", 2, 60)
    rechecks = [Recheck(b.lease, 3600.0, json.dumps({"interval": 3600}))] if scheduled else []
    backend.commit([], [a.lease] if scheduled else [a.lease, b.lease], [], rechecks=rechecks)
    backend.set_status("completed")
    reset_if_completed(backend, "demo", 60, rechecks=True)
    counts = backend.counts()
    if scheduled:
        assert (counts.status, counts.done, counts.scheduled, counts.seen) == ("completed", 2, 1, 2), counts
    else:
        assert (counts.status, counts.done, counts.seen) != ("completed", 2, 2), counts
        assert (counts.done, counts.seen, counts.queued) == (0, 0, 0), counts


def test_a_completed_crawl_whose_recheck_a_node_holds_is_not_started_anew(backend: FrontierBackend) -> None:
    """Completed, its one recheck leased (a node fetches it, or died with it): nothing scheduled or due,
    yet the crawl is not to be wiped (its seen-set, the recheck's validators): no reset."""
    from recordhound.frontier.lifecycle import reset_if_completed

    backend.commit([entry("a")], [], [], seeded=True)
    (a,) = backend.lease("n1", 1, 60)
    backend.commit([], [], [], rechecks=[Recheck(a.lease, 0.0, json.dumps({"interval": 3600, "etag": "x"}))])
    backend.set_status("completed")
    backend.lease("n2", 1, 60)  # due at once: leased
    reset_if_completed(backend, "demo", 60, rechecks=True)
    counts = backend.counts()
    assert (counts.status, counts.seen, counts.leased_total) == ("completed", 1, 1), counts
