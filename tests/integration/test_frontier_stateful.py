"""Stateful property tests of the frontier contract (the TABLE in ``recordhound/frontier/backend.py``).

Hypothesis drives random sequences of the contract's operations on both real backends (a SQLite
file, the shared Redis under a prefix of its own) and, after every step, compares the store with
a small model: per entry its state, lost count, holder and token, nothing of how a backend stores
it. Time is never faked: waits are 0 (due at once) or an hour (never due in a run), leases are
long (never expire in a run) or short (the ``expire`` rule sleeps past them, then reclaims).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test)

from recordhound.frontier.backend import (
    FAILED, LEASED, QUEUED, SCHEDULED, WAITING, Entry, EntryState, Failure, FrontierBackend, Lease, Leased,
    NodeInfo, Recheck)
from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import crawl_prefix
from recordhound.frontier.sqlite import SqliteFrontier
from tests.integration.test_frontier_contract import fp
from tests.services import redis_url, unique_prefix

DONE = "done"  # the model's name for an acked entry (the store no longer holds it)
NODES = ("n1", "n2", "n3")
URLS = [f"https://shop.test/p/{i}" for i in range(10)]  # few: duplicates are common
LONG, SHORT = 600.0, 0.02  # lease seconds: never expires in a run / expires within a step or two
LATER = 3600.0  # a retry or recheck this far off never comes due in a run
REDIS_VERIFY_EVERY = 10  # Redis verify() walks all 65,536 seen buckets (~100 ms): every 10th step and at the end
MAX_STEPS = 30  # steps of one example at most (MAX_EXAMPLES below: examples per backend)


@dataclass
class Item:
    """The model of one entry: the TABLE's state and lost count, and what its next lease reports."""

    id: int
    payload: str
    priority: int
    state: str = QUEUED
    lost: int = 0
    attempts: int = 0  # leases ever taken (Leased.attempts)
    tries: int = 0  # failed attempts since queued or requeued (Leased.tries)
    recheck: str = ""  # the last recheck's state (Leased.state)
    due: bool = False  # waiting or scheduled, and its time has come
    owner: str = ""
    token: int = 0
    expires_by: float | None = None  # short leases: the local time by which the lease has expired

    @property
    def lease(self) -> Lease:
        return Lease(self.id, self.token)

    def entry_state(self) -> EntryState:
        if self.state == LEASED:
            return EntryState(LEASED, self.lost, self.owner, self.token)
        return EntryState(self.state, self.lost)


class FrontierMachine(RuleBasedStateMachine):
    """The contract on a SQLite file of its own (RedisFrontierMachine: on the shared Redis)."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = ""  # the embedded backend's own folder
        self.backend = self.make_backend()
        self.items: dict[int, Item] = {}
        self.seen: set[bytes] = set()
        self.next_id = 1
        self.stale: list[tuple[str, Lease]] = []  # (node, lease) of leases that ended: fenced off
        self.node_tokens = {node: f"{node}-1" for node in NODES}
        self.trying: dict[str, Lease] = {}  # node -> the lease its process said it tries alone
        self.steps = 0
        self.unfiltered = 0  # dont_filter entries made so far
        self.backend.open()
        for node, token in self.node_tokens.items():
            assert self.backend.claim_node(node, NodeInfo("host", 1, token, 0.0), None)

    # ---- the model ------------------------------------------------------------------------
    def _in(self, *states: str) -> list[Item]:
        return [item for item in self.items.values() if item.state in states]

    def _held(self, node: str | None = None) -> list[Item]:
        return [i for i in self._in(LEASED) if node is None or i.owner == node]

    def _end(self, item: Item, state: str) -> None:
        """The current lease of ``item`` ends: its token is stale from now on."""
        self.stale.append((item.owner, item.lease))
        item.state, item.owner, item.token, item.expires_by, item.due = state, "", 0, None, False

    def _requeue_lost(self, item: Item) -> None:
        """Its holder died or stalled: a suspect from now on; one more loss if it was being tried alone."""
        tried = self.trying.get(item.owner) == item.lease
        self._end(item, QUEUED)
        item.lost = item.lost + 1 if tried else max(item.lost, 1)

    def _current(self, lease: Lease) -> Item | None:
        item = self.items.get(lease.id)
        return item if item is not None and item.state == LEASED and item.token == lease.token else None

    # ---- rules ----------------------------------------------------------------------------
    @initialize(data=st.data())
    def start_requests(self, data: st.DataObject) -> None:
        specs = data.draw(st.lists(_entries(), max_size=6), label="start requests")
        self._commit(self._make(specs), seeded=True)

    @precondition(lambda self: len(self._in(QUEUED)) < 8)  # a longer queue adds nothing but time
    @rule(data=st.data())
    def enqueue(self, data: st.DataObject) -> None:
        specs = data.draw(st.lists(_entries(), min_size=1, max_size=4), label="entries")
        self._commit(self._make(specs))

    @precondition(lambda self: self._in(QUEUED) or any(i.due for i in self._in(WAITING, SCHEDULED)))
    @rule(node=st.sampled_from(NODES), count=st.integers(1, 3), short=st.booleans(), fresh=st.booleans())
    def lease(self, node: str, count: int, short: bool, fresh: bool) -> None:
        for item in self._in(WAITING, SCHEDULED):
            if item.due:  # a lease first queues what has come due (a due recheck is no longer done)
                item.state, item.due = QUEUED, False
        queued = [i for i in self._in(QUEUED) if not (fresh and i.lost)]  # fresh only: suspects stay queued
        ready = sorted(queued, key=lambda i: (-i.priority, i.id))[:count]
        got = self.backend.lease(node, count, SHORT if short else LONG, fresh_only=fresh)
        assert [x.id for x in got] == [i.id for i in ready], "priority first, then FIFO (fresh only: no suspect)"
        expires_by = time.time() + SHORT if short else None
        for item, leased in zip(ready, got):
            self._check_leased(item, leased)
            item.state, item.owner, item.token, item.expires_by = LEASED, node, leased.token, expires_by
            item.attempts += 1

    def _check_leased(self, item: Item, leased: Leased) -> None:
        assert (leased.payload, leased.attempts, leased.lost, leased.tries, leased.state) == (
            item.payload, item.attempts + 1, item.lost, item.tries, item.recheck)
        stale = {lease for _, lease in self.stale}
        assert leased.lease not in stale, "a new lease never repeats a fenced-off token"

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        acks = self._draw_leases(data)
        self._commit([], acks=acks)

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def fail_for_good(self, data: st.DataObject) -> None:
        failures = [Failure(lease, "http_404", attempt=_attempt("http_404")) for lease in self._draw_leases(data)]
        self._commit([], failures=failures)

    @precondition(lambda self: self._held())
    @rule(data=st.data(), retry_in=st.sampled_from([0.0, LATER]))
    def fail_with_retry(self, data: st.DataObject, retry_in: float) -> None:
        failures = [Failure(lease, "http_503", retry_in, _attempt("http_503")) for lease in self._draw_leases(data)]
        self._commit([], failures=failures)

    @precondition(lambda self: self._held())
    @rule(data=st.data(), due_in=st.sampled_from([0.0, LATER]))
    def recheck(self, data: st.DataObject, due_in: float) -> None:
        rechecks = [Recheck(lease, due_in, json.dumps({"etag": f"e{lease.id}-{lease.token}"}))
                    for lease in self._draw_leases(data)]
        self._commit([], rechecks=rechecks)

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def mixed_commit(self, data: st.DataObject) -> None:
        """New entries, acks, both kinds of failure and rechecks in one atomic commit."""
        entries = self._make(data.draw(st.lists(_entries(), max_size=3), label="entries"))
        acks: list[Lease] = []
        failures: list[Failure] = []
        rechecks: list[Recheck] = []
        leases = self._draw_leases(data, stale=False)
        if data.draw(st.booleans(), label="one lease named twice"):  # acks, failures, rechecks: the first wins
            leases.append(data.draw(st.sampled_from(leases), label="twice"))
        for lease in leases:
            kind = data.draw(st.sampled_from(["ack", "fail", "retry", "recheck"]), label=f"outcome of {lease}")
            if kind == "ack":
                acks.append(lease)
            elif kind == "recheck":
                rechecks.append(Recheck(lease, LATER, "{}"))
            else:
                failures.append(Failure(lease, kind, LATER if kind == "retry" else None, _attempt(kind)))
        self._commit(entries, acks, failures, rechecks)

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        leases = self._draw_leases(data)
        current = [item for lease in leases if (item := self._current(lease)) is not None]
        assert self.backend.release(leases) == len(current)
        for item in current:
            self._end(item, QUEUED)  # released: no lost count

    @precondition(lambda self: self._held() or self.stale)
    @rule(data=st.data(), node=st.sampled_from(NODES), clear=st.booleans())
    def try_alone(self, data: st.DataObject, node: str, clear: bool) -> None:
        """A node says which lease it tries alone: its own, another node's or an ended one (a mark
        that names no current lease of that node counts nothing), or none (the try ended)."""
        if clear:
            self.trying.pop(node, None)
            self.backend.try_alone(node, None)
            return
        leases = sorted({i.lease for i in self._held()} | {lease for _, lease in self.stale},
                        key=lambda x: (x.id, x.token))
        lease = data.draw(st.sampled_from(leases), label="tries alone")
        self.trying[node] = lease
        self.backend.try_alone(node, lease)

    @precondition(lambda self: any(i.expires_by is not None for i in self._held()))
    @rule()
    def expire(self) -> None:
        """The short leases' holders stalled: after their expiry, reclaim_expired returns them."""
        short = [i for i in self._held() if i.expires_by is not None]
        wait = max(i.expires_by or 0.0 for i in short) + 0.005 - time.time()
        if wait > 0:
            time.sleep(wait)
        assert self.backend.reclaim_expired() == len(short)
        for item in short:
            self._requeue_lost(item)

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def restart_node(self, data: st.DataObject) -> None:
        self._reclaim(self._draw_holder(data))

    def _reclaim(self, node: str) -> None:
        held = self._held(node)
        assert self.backend.reclaim_node(node) == len(held)
        for item in held:
            self._requeue_lost(item)

    @precondition(lambda self: self._held())
    @rule(data=st.data())
    def forget_node(self, data: st.DataObject) -> None:
        """The node is gone for good: its leases are reclaimed, it leaves, a new process takes the id."""
        node = self._draw_holder(data)
        self._reclaim(node)
        old = self.node_tokens[node]
        self.backend.leave(node, old)
        assert node not in self.backend.nodes()
        self.node_tokens[node] = f"{node}-{int(old.rsplit('-', 1)[1]) + 1}"
        assert self.backend.claim_node(node, NodeInfo("host", 2, self.node_tokens[node], 0.0), None)

    @precondition(lambda self: self._in(FAILED))
    @rule(data=st.data(), completed=st.booleans())
    def requeue_failed(self, data: st.DataObject, completed: bool) -> None:
        failed = sorted(i.id for i in self._in(FAILED))
        ids = data.draw(st.lists(st.sampled_from(failed), min_size=1, unique=True), label="ids")
        others = [i for i in self.items if i not in failed] + [self.next_id + 100]  # not dead letters
        ids += data.draw(st.lists(st.sampled_from(others), max_size=2), label="not failed")
        if completed:
            self.backend.set_status("completed")
        status = self.backend.counts().status
        assert self.backend.requeue_failed(ids) == len({i for i in ids if i in failed})
        assert self.backend.counts().status == ("running" if status == "completed" else status)
        for frontier_id in set(ids) & set(failed):
            item = self.items[frontier_id]
            item.state, item.lost, item.tries = QUEUED, 0, 0

    @precondition(lambda self: self._held())
    @rule(data=st.data(), node=st.sampled_from(NODES))
    def reconcile(self, data: st.DataObject, node: str) -> None:
        """The process of ``node`` holds some of its leases, maybe fenced-off ones, maybe one it
        wrongly thinks it holds (another node's): the store releases the rest of ``node``'s."""
        held = self._draw_held(data, node)
        current = {item.lease for item in self._held(node)}
        result = self.backend.reconcile(node, held)
        assert result.gone == [lease for lease in held if lease not in current]
        unheld = [item for item in self._held(node) if item.lease not in held]
        assert result.released == len(unheld)
        for item in unheld:
            self._end(item, QUEUED)  # released: no lost count

    @precondition(lambda self: self._held())
    @rule(data=st.data(), node=st.sampled_from(NODES), short=st.booleans())
    def renew(self, data: st.DataObject, node: str, short: bool) -> None:
        held = self._draw_held(data, node)
        current = {item.lease: item for item in self._held(node)}
        assert self.backend.renew(node, held, SHORT if short else LONG) == [x for x in held if x not in current]
        expires_by = time.time() + SHORT if short else None
        for lease in held:
            if lease in current:
                current[lease].expires_by = expires_by

    @precondition(lambda self: self.stale)
    @rule(data=st.data(), how=st.sampled_from(["ack", "fail", "retry", "recheck", "release", "renew"]))
    def stale_holder(self, data: st.DataObject, how: str) -> None:
        """A holder that stalled past its lease writes its outcome late: refused, nothing changes."""
        node, lease = data.draw(st.sampled_from(self.stale), label="stale lease")
        if how == "release":
            assert self.backend.release([lease]) == 0
        elif how == "renew":
            assert self.backend.renew(node, [lease], LONG) == [lease]
        else:
            failure = Failure(lease, "late", 0.0 if how == "retry" else None, _attempt("late"))
            self._commit([], acks=[lease] if how == "ack" else [],
                         failures=[failure] if how in ("fail", "retry") else [],
                         rechecks=[Recheck(lease, 0.0, "{}")] if how == "recheck" else [])

    # ---- rule helpers ---------------------------------------------------------------------
    def _make(self, specs: list[tuple[str, int, bool]]) -> list[Entry]:
        """Entries to commit; a dont_filter one gets a payload of its own (verify() reports the
        same payload stored twice as a request queued twice)."""
        entries = []
        for url, priority, dont_filter in specs:
            self.unfiltered += dont_filter
            entries.append(Entry(None, priority, f"{url}#{self.unfiltered}") if dont_filter
                           else Entry(fp(url), priority, url))
        return entries

    def _draw_leases(self, data: st.DataObject, stale: bool = True) -> list[Lease]:
        """Some current leases (any node), sometimes with a fenced-off one among them."""
        current = sorted((i.lease for i in self._held()), key=lambda x: x.id)
        leases = data.draw(st.lists(st.sampled_from(current), min_size=1, max_size=3, unique=True), label="leases")
        if stale and self.stale and data.draw(st.booleans(), label="with a stale one"):
            leases.append(data.draw(st.sampled_from(self.stale), label="stale")[1])
        return leases

    def _draw_holder(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted({i.owner for i in self._held()})), label="node")

    def _draw_held(self, data: st.DataObject, node: str) -> list[Lease]:
        """What a process of ``node`` holds: some of its leases, sometimes one that is not (a
        fenced-off lease, maybe of an entry it holds again; or another node's lease)."""
        mine = sorted((i.lease for i in self._held(node)), key=lambda x: x.id)
        held = data.draw(st.lists(st.sampled_from(mine), unique=True), label="held") if mine else []
        others = [lease for _, lease in self.stale] + [i.lease for i in self._held() if i.owner != node]
        wrong = data.draw(st.booleans(), label="holds one the store does not give it")
        if others and wrong:
            position = data.draw(st.integers(0, len(held)), label="at")
            held.insert(position, data.draw(st.sampled_from(others), label="not its lease"))
        return held

    def _commit(self, entries: list[Entry], acks: list[Lease] | None = None, failures: list[Failure] | None = None,
                rechecks: list[Recheck] | None = None, seeded: bool = False) -> None:
        acks, failures, rechecks = acks or [], failures or [], rechecks or []
        committed = self.backend.commit(entries, acks, failures, seeded, rechecks)
        queued = self._queue(entries)
        outcomes: list[tuple[Lease, Callable[[Item], None]]] = [(lease, self._acked) for lease in acks]
        outcomes += [(f.lease, partial(self._failed, failure=f)) for f in failures]
        outcomes += [(r.lease, partial(self._rechecked, recheck=r)) for r in rechecks]
        refused = 0
        for lease, apply in outcomes:  # in this order; a lease no longer current is refused
            item = self._current(lease)
            if item is None:
                refused += 1
            else:
                apply(item)
        assert (committed.queued, committed.refused) == (queued, refused)

    def _queue(self, entries: list[Entry]) -> int:
        queued = 0
        for entry in entries:
            if entry.fingerprint is not None:
                if entry.fingerprint in self.seen:
                    continue
                self.seen.add(entry.fingerprint)
            self.items[self.next_id] = Item(self.next_id, entry.payload, entry.priority)
            self.next_id += 1
            queued += 1
        return queued

    def _acked(self, item: Item) -> None:
        self._end(item, DONE)

    def _failed(self, item: Item, failure: Failure) -> None:
        item.tries += 1
        if failure.retry_in is None:
            self._end(item, FAILED)
            item.lost, item.recheck = 0, ""  # dropped; requeue_failed starts from 0
        else:
            self._end(item, WAITING)  # lost kept
            item.due = failure.retry_in == 0

    def _rechecked(self, item: Item, recheck: Recheck) -> None:
        self._end(item, SCHEDULED)
        item.lost, item.tries, item.recheck, item.due = 0, 0, recheck.state, recheck.due_in == 0

    # ---- invariants -----------------------------------------------------------------------
    @invariant()
    def states_match_the_model(self) -> None:
        expected = {i.id: i.entry_state() for i in self.items.values() if i.state != DONE}
        assert self.backend.states() == expected
        assert sorted(x.id for x in self.backend.dead_letters()) == sorted(i.id for i in self._in(FAILED))
        for node in NODES:
            assert sorted(self.backend.leases_of(node), key=lambda x: x.id) == sorted(
                (i.lease for i in self._held(node)), key=lambda x: x.id)

    @invariant()
    def counts_match_the_states(self) -> None:
        by_state = Counter(i.state for i in self.items.values())
        scheduled = [i for i in self._in(SCHEDULED)]
        due = sum(1 for i in scheduled if i.due)
        counts = self.backend.counts()
        assert counts.queued == by_state[QUEUED] + by_state[WAITING]
        assert counts.waiting == sum(1 for i in self._in(WAITING) if not i.due)
        assert counts.leased == dict(Counter(i.owner for i in self._held()))
        assert (counts.failed, counts.due) == (by_state[FAILED], due)
        assert counts.scheduled == counts.due_within_hour == len(scheduled) - due
        assert counts.done == by_state[DONE] + len(scheduled) - due
        assert counts.seen == len(self.seen)
        assert counts.seeded and counts.drained == (not self._in(QUEUED, WAITING, LEASED) and not due)

    @invariant()
    def everything_committed_stays_seen(self) -> None:
        for fingerprint in self.seen:
            assert self.backend.is_seen(fingerprint)
        assert not self.backend.is_seen(fp("https://shop.test/never-committed"))

    @invariant()
    def nodes_match(self) -> None:
        assert {node: info.token for node, info in self.backend.nodes().items()} == self.node_tokens

    @invariant()
    def verify_finds_nothing(self) -> None:
        self.steps += 1
        if isinstance(self.backend, SqliteFrontier) or self.steps % REDIS_VERIFY_EVERY == 0:
            assert self.backend.verify() == []

    def make_backend(self) -> FrontierBackend:
        self.folder = tempfile.mkdtemp(prefix="frontier-stateful-")
        return SqliteFrontier(os.path.join(self.folder, "frontier.sqlite3"))

    def teardown(self) -> None:
        try:
            assert self.backend.verify() == []
        finally:
            self.backend.reset()
            self.backend.close()
            if self.folder:
                shutil.rmtree(self.folder, ignore_errors=True)


class RedisFrontierMachine(FrontierMachine):
    def make_backend(self) -> FrontierBackend:
        return RedisFrontier(redis_url(), crawl_prefix(unique_prefix(), "stateful"))  # reset() at teardown: never FLUSHDB


def _entries() -> st.SearchStrategy[tuple[str, int, bool]]:
    """(url, priority, dont_filter): a URL of the pool (often seen already), or a dont_filter one."""
    return st.tuples(st.sampled_from(URLS), st.integers(-1, 2), st.booleans())


def _attempt(outcome: str) -> str:
    return json.dumps({"at": 0, "node": "n", "outcome": outcome})


@pytest.mark.parametrize("machine", [FrontierMachine, RedisFrontierMachine], ids=["embedded", "redis"])
def test_random_operation_sequences_follow_the_table(machine: type[FrontierMachine]) -> None:
    # no example database: a failure is reproduced by its printed steps, made a regression test
    # (tests/integration/test_frontier_contract.py), not replayed from files left in the checkout
    run_state_machine_as_test(machine, settings=settings(
        max_examples=MAX_EXAMPLES[machine], stateful_step_count=MAX_STEPS, deadline=None, database=None))


MAX_EXAMPLES = {FrontierMachine: 150, RedisFrontierMachine: 30}  # ~10 s + ~17 s (Redis: mostly its verify)
