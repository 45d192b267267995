"""The frontier backend contract, shared by the embedded (SQLite) and Redis backends.

An entry is in exactly one state at a time; a lease of it ends in exactly one recorded outcome.
This table is the whole state machine: both backends implement exactly it, and
``tests/integration/test_frontier_stateful.py`` drives random sequences of these operations on
both real backends and checks it after every step.

==========  =================================  ==========  ============  ====================
state       operation                          next state  lease outcome lost count
==========  =================================  ==========  ============  ====================
(new)       ``commit`` entry, fingerprint new  queued      --            0
queued      ``lease``                          leased      --            kept
leased      ``commit`` ack                     (done)      acked         dropped
leased      ``commit`` Recheck                 scheduled   recheck       reset to 0
leased      ``commit`` Failure(retry_in=s)     waiting     retry-wait    kept
leased      ``commit`` Failure(retry_in=None)  failed      failed        dropped
leased      ``release`` / ``reconcile``        queued      released      kept (no attempt)
leased      ``reclaim_expired`` (expiry past)  queued      expired       see below
leased      ``reclaim_node`` (holder is gone)  queued      expired       see below
waiting     its not-before time comes          queued      --            kept
scheduled   its due time comes                 queued      --            kept (0)
failed      ``requeue_failed``                 queued      --            reset to 0
==========  =================================  ==========  ============  ====================

The "lost count" says how often an entry's lease ended *expired* (the holder died or stalled past
its lease) in a way that points at the entry: only it counts toward
``RECORDHOUND_FRONTIER_MAX_ATTEMPTS`` ("leased N times without an outcome"). An expired lease makes
an entry with count 0 a *suspect* (count 1); a suspect's count grows by one only when it was the
lease its holder was trying alone (``try_alone``: the scheduler hands out suspects one at a time and
says so first). So kills that land while a page merely sits among a node's leases never fail it;
a page that kills its process fails after one death in company and four alone. A graceful return
(*released*) counts nothing: a deploy or a ``scrapyd cancel`` never turns an unfetched page into a
dead letter. Requeueing a dead letter and each recheck cycle start the count again.

Further invariants (``verify`` checks the stored ones):

1. ``commit`` marks a fingerprint seen in the same atomic step that queues its request.
2. In one ``commit``, new requests are queued before any ack or failure is recorded.
3. Leases are handed out by priority (higher first), FIFO within a priority.
4. Leases are fenced: every lease has a token, and ack, fail, renew and release take effect only
   while that token is the entry's current lease. A holder that stalled past its lease, whose
   entry was re-leased, is refused (``refused``). Redis tokens are random, not counts, so a
   store restored from an older snapshot never hands out a token a live process still holds.
5. The crawl is ``seeded`` when the start requests are durably queued (the same ``commit``);
   until then it is never drained, and a claim of a dead claimant can be taken over.
6. A waiting retry counts as queued (the crawl is not drained while a retry waits); a scheduled
   recheck counts as done until due, then as ``due`` (work for a node that runs, never a
   "queued" entry of a completed crawl).
7. What a process holds is a cache of the store: ``renew`` and ``reconcile`` take the (id, token)
   pairs the process holds and say which of them the store no longer has.
8. ``counts``, ``states`` and ``verify`` read one snapshot (one read transaction, one script).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from recordhound.exceptions import RecordhoundError

REQUEUED = "requeued"  # the outcome of a history entry that marks a dead letter put back


@dataclass(frozen=True)
class Entry:
    """A request to queue: its compact fingerprint (None: never deduplicated)."""

    fingerprint: bytes | None
    priority: int
    payload: str


@dataclass(frozen=True)
class Lease:
    """One lease of one entry: ``token`` fences it (the entry's lease count when it was taken)."""

    id: int
    token: int


@dataclass(frozen=True)
class Leased:
    id: int
    payload: str
    attempts: int  # how many times this entry has been leased, this one included
    token: int  # fences this lease (see Lease)
    lost: int = 0  # leases of this entry that expired (no outcome) since it was queued, requeued or rechecked
    tries: int = 0  # failed attempts since it was queued (or requeued from the dead letters)
    state: str = ""  # a recheck's state (see Recheck); "" the first time

    @property
    def lease(self) -> Lease:
        return Lease(self.id, self.token)


@dataclass(frozen=True)
class Failure:
    lease: Lease
    reason: str
    retry_in: float | None = None  # seconds: back in the queue then (a retry); None: failed for good
    attempt: str = ""  # JSON of this attempt's outcome ({at, node, outcome}) for the entry's history


@dataclass(frozen=True)
class Recheck:
    """An ack that keeps the request: fetch it again in ``due_in`` seconds, with ``state``
    (JSON: its interval, ETag, Last-Modified, body fingerprint)."""

    lease: Lease
    due_in: float
    state: str


@dataclass(frozen=True)
class DeadLetter:
    """A request that failed for good: why, when, and every attempt before."""

    id: int
    payload: str
    reason: str
    at: float
    history: list[dict[str, Any]]
    priority: int = 0

    @property
    def url(self) -> str:
        return str(json.loads(self.payload).get("url", ""))


def parse_history(raw: str | bytes | None) -> list[dict[str, Any]]:
    """An entry's stored attempt history (a JSON list; absent: none)."""
    if not raw:
        return []
    history = json.loads(raw)
    return history if isinstance(history, list) else []


def count_tries(raw: str | bytes | None) -> int:
    """Failed attempts of a stored history since its last requeue."""
    history = parse_history(raw)
    last = max((i for i, h in enumerate(history) if h.get("outcome") == REQUEUED), default=-1)
    return len(history) - last - 1


@dataclass(frozen=True)
class Committed:
    queued: int  # new entries queued (the rest were seen before)
    refused: int = 0  # acks and failures of leases that are no longer current (fenced off)
    writes: int = 0  # the writer's commits the store has counted, this one included
    regressed: bool = False  # the store counts fewer of the writer's commits than ``floor``: nothing applied


@dataclass(frozen=True)
class Reconciled:
    released: int  # leases the store gave this node that the process does not hold: back in the queue
    gone: list[Lease]  # leases the process holds that the store no longer has (drop them)
    taken: bool = False  # ``token`` is no longer the node's registration: nothing was changed


QUEUED, WAITING, LEASED, SCHEDULED, FAILED = "queued", "waiting", "leased", "scheduled", "failed"
STATES = (QUEUED, WAITING, LEASED, SCHEDULED, FAILED)  # every state an entry is stored in (done: gone)


@dataclass(frozen=True)
class EntryState:
    """One stored entry as a snapshot sees it."""

    state: str  # one of STATES
    lost: int = 0
    owner: str = ""  # the node of a leased entry
    token: int = 0  # the current lease's token (leased entries)


@dataclass
class Counts:
    queued: int = 0  # ready to lease, or waiting for a retry
    leased: dict[str, int] = field(default_factory=dict)  # node id -> leases held
    done: int = 0
    failed: int = 0
    seen: int = 0
    status: str = "new"  # new | running | completed | resetting (by one owner: ``reset_owner``)
    seeded: bool = False  # the start requests are queued
    start_claim: str = ""  # token of the node that claimed the start requests
    waiting: int = 0  # of the queued: entries whose retry time has not come yet
    scheduled: int = 0  # done entries whose recheck is not due yet (not queued)
    due_within_hour: int = 0  # of the scheduled: due in the next hour
    due: int = 0  # done entries whose recheck is due now (leased by the next node that asks)

    @property
    def leased_total(self) -> int:
        return sum(self.leased.values())

    @property
    def to_fetch(self) -> int:
        """Entries a running node would lease now or later in this run."""
        return self.queued + self.due

    @property
    def drained(self) -> bool:
        return self.seeded and self.to_fetch == 0 and self.leased_total == 0


@dataclass(frozen=True)
class NodeInfo:
    host: str
    pid: int
    token: str
    heartbeat: float  # backend clock, seconds


class FrontierBackend(ABC):
    """One crawl's frontier. Methods are short synchronous calls (never blocking waits)."""

    @abstractmethod
    def open(self) -> None:
        """Connect (and create storage); raises RecordhoundError naming what is unreachable."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def now(self) -> float:
        """The backend's clock (seconds), the one lease expiries are measured against."""

    def limit_wait(self, seconds: float) -> None:
        """From now on, no call waits longer than ``seconds`` (a lock, a reply); the reactor's calls."""

    def is_transient(self, exc: BaseException) -> bool:
        """Whether ``exc`` means "the store is unreachable or busy right now" (pause and retry),
        as opposed to a bug or bad data (fail loudly); also behind the RecordhoundError that
        ``open()`` wraps its client's error in ("cannot reach Redis at ...")."""
        if isinstance(exc, RecordhoundError) and exc.__cause__ is not None:
            return self.is_transient(exc.__cause__)
        return self._transient(exc)

    def _transient(self, exc: BaseException) -> bool:
        """This store's client errors that mean unreachable or busy."""
        return False

    @abstractmethod
    def commit(self, entries: list[Entry], acks: list[Lease], failures: list[Failure],
               seeded: bool = False, rechecks: list[Recheck] | None = None, writer: str = "",
               floor: int = 0) -> Committed:
        """Atomically queue unseen entries, then ack, fail, and ack and schedule a recheck of current
        leases, in that order (a lease named twice: the first outcome is taken, the later refused;
        ``seeded``: the start requests are all in, the same step). With ``writer`` (a node), the
        store counts that node's commits; if it counts fewer than ``floor`` (what the node saw after
        its last commit), it lost some of them (restored from an older snapshot): nothing is applied
        and the answer says ``regressed``, so no ack lands before the node has re-sent what was lost."""

    @abstractmethod
    def lease(self, node: str, count: int, lease_seconds: float, fresh_only: bool = False) -> list[Leased]:
        """Lease up to ``count`` queued entries to ``node``, priority first, then FIFO. ``fresh_only``:
        skip suspects (lost > 0); they keep their place (a node trying one leases past the others)."""

    @abstractmethod
    def release(self, leases: list[Lease]) -> int:
        """Return current leases to the queue (unstarted work at shutdown); returns how many."""

    def probe(self) -> None:
        """One real round trip to the store (raises what the store's client raises)."""
        self.now()

    def connections(self) -> int:
        """How many connections the client has opened so far: a change means it reconnected
        (maybe silently, maybe to a store restored from an older snapshot)."""
        return 1

    @abstractmethod
    def renew(self, node: str, leases: list[Lease], lease_seconds: float) -> list[Lease]:
        """Extend these leases of ``node`` (the ones its process holds); returns those that are
        no longer current (the store lost them, or they expired and were taken over)."""

    @abstractmethod
    def reconcile(self, node: str, held: list[Lease], token: str = "") -> Reconciled:
        """Make the store agree with what ``node``'s process holds, in one atomic step: leases the
        store gives ``node`` that are not in ``held`` are released (their reply was lost, or the
        store came back from an older snapshot); ``held`` leases the store no longer has are named.
        With ``token``, a process registered as ``node`` under another token (it took the node id over
        while this one stalled past its lease time) keeps its leases, and the answer says ``taken``;
        a node id nobody holds (forgotten as dead) is this process's to re-sync."""

    @abstractmethod
    def leases_of(self, node: str) -> list[Lease]:
        """The leases ``node`` holds in the store."""

    @abstractmethod
    def try_alone(self, node: str, lease: Lease | None) -> None:
        """Record the one lease ``node``'s process is trying alone (None: no try in progress). When
        the node's leases come back as expired, only that lease counts one more loss; the others
        held become suspects (lost 1) and their count does not grow. A mark that names a lease
        which is no longer current counts nothing."""

    @abstractmethod
    def reclaim_expired(self) -> int:
        """Return expired leases (of any node) to the queue; returns how many."""

    @abstractmethod
    def reclaim_node(self, node: str) -> int:
        """Return every lease ``node`` holds to the queue (that node restarted)."""

    @abstractmethod
    def is_seen(self, fingerprint: bytes) -> bool: ...

    @abstractmethod
    def counts(self) -> Counts:
        """The crawl's counters and states, read in one snapshot."""

    @abstractmethod
    def states(self) -> dict[int, EntryState]:
        """Every stored entry's state, read in one snapshot (``verify``, tests; O(entries))."""

    @abstractmethod
    def failures(self, limit: int = 100) -> list[tuple[str, str]]:
        """Recent failed entries as (payload, reason)."""

    @abstractmethod
    def dead_letters(self) -> list[DeadLetter]:
        """Every entry that failed for good, oldest first."""

    @abstractmethod
    def requeue_failed(self, ids: list[int]) -> int:
        """Put these dead letters back in the queue (history kept, lost count and tries reset);
        returns how many. A completed crawl is running again, so its next node fetches exactly these."""

    @abstractmethod
    def claim_start(self, token: str, replace_token: str) -> bool:
        """Claim the start requests for the node with ``token``, if the crawl is not seeded and
        the current claim is ``replace_token`` ("" for none: the first claim; a dead claimant's
        token: a takeover). Compare-and-set: one caller wins."""

    @abstractmethod
    def begin_reset(self, expected_status: str, expected_owner: str = "") -> bool:
        """Compare-and-set the crawl's status from ``expected_status`` to "resetting", owned by a new
        token of this handle's (one node of many starting on a completed crawl wins, and then calls
        ``reset``, which that token fences). From "resetting" (a reset left unfinished, its party
        gone) the current owner must be ``expected_owner`` too (``reset_owner``'s answer): of the
        parties that found the same left-over reset, exactly one takes it over."""

    @abstractmethod
    def reset_owner(self) -> str:
        """The token of the party that began (or took over) the reset in progress ("": none, or one
        begun by an older version)."""

    @abstractmethod
    def set_status(self, status: str) -> None: ...

    @abstractmethod
    def nodes(self) -> dict[str, NodeInfo]: ...

    @abstractmethod
    def claim_node(self, node: str, info: NodeInfo, replace_token: str | None) -> bool:
        """Register ``node`` if it is free, or held by ``replace_token`` (a dead holder)."""

    @abstractmethod
    def heartbeat(self, node: str, token: str) -> bool:
        """Refresh ``node``'s heartbeat; False if another process has taken the node id."""

    @abstractmethod
    def leave(self, node: str, token: str) -> None: ...

    @abstractmethod
    def verify(self) -> list[str]:
        """Inconsistencies in the stored state (empty: none): a request queued twice, an id both
        queued and leased (or done), a lease without owner or expiry, counters that do not add up."""

    @abstractmethod
    def reset(self) -> bool:
        """Forget this crawl entirely (queue, leases, seen-set, counters, nodes). A reset this handle
        began (``begin_reset``) deletes only while it still owns it: False when another party took it
        over (or finished it, and the crawl may be filling again), and nothing more was deleted. A
        reset nobody began (the operator's ``frontier reset``) is unconditional."""
