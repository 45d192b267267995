"""The frontier backend contract, shared by the embedded (SQLite) and Redis backends.

Invariants every backend keeps (tests/integration/test_frontier_contract.py checks them):

1. ``commit`` marks a fingerprint seen in the same atomic step that queues its request.
2. In one ``commit``, new requests are queued before any ack or failure is recorded.
3. A leased entry is acked, failed with a reason, or returned to the queue (lease expiry,
   ``reclaim_node`` of its node, ``release``). Nothing else removes it.
4. Leases are handed out by priority (higher first), FIFO within a priority.
5. Leases are fenced: every lease has a token (the entry's lease count, which only grows), and
   ack, fail and release take effect only while that token is the entry's current lease. A
   holder that stalled past its lease, whose entry was re-leased, is refused (``refused``).
6. The crawl is ``seeded`` when the start requests are durably queued (the same ``commit``);
   until then it is never drained, and a claim of a dead claimant can be taken over.
7. A failure with ``retry_in`` puts the entry back in the queue, not to be leased before that
   many seconds have passed on the backend's clock (the wait is stored, not slept); every
   failure appends its attempt to the entry's history, which a dead letter keeps. A waiting
   entry counts as queued: the crawl is not drained while a retry waits.
8. A ``Recheck`` acks a lease and keeps its request to be fetched again (a recrawl schedule):
   it counts as done and is not queued until its due time; then it is leased like any queued
   entry, with the state it was acked with (validators for a conditional request, its interval).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

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
    outcomes: int = 0  # attempts with a recorded outcome (its history); the rest were lost leases
    tries: int = 0  # failed attempts since it was queued (or requeued from the dead letters)
    state: str = ""  # a recheck's state (see Recheck); "" the first time

    @property
    def lease(self) -> Lease:
        return Lease(self.id, self.attempts)


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


def count_history(raw: str | bytes | None) -> tuple[int, int]:
    """(outcomes, tries) of a stored history: recorded attempts, and failures since the last requeue."""
    history = parse_history(raw)
    outcomes = sum(1 for h in history if h.get("outcome") != REQUEUED)
    last = max((i for i, h in enumerate(history) if h.get("outcome") == REQUEUED), default=-1)
    return outcomes, len(history) - last - 1


@dataclass(frozen=True)
class Committed:
    queued: int  # new entries queued (the rest were seen before)
    refused: int = 0  # acks and failures of leases that are no longer current (fenced off)


@dataclass
class Counts:
    queued: int = 0
    leased: dict[str, int] = field(default_factory=dict)  # node id -> leases held
    done: int = 0
    failed: int = 0
    seen: int = 0
    status: str = "new"  # new | running | completed | resetting
    seeded: bool = False  # the start requests are queued
    start_claim: str = ""  # token of the node that claimed the start requests
    waiting: int = 0  # of the queued: entries whose retry time has not come yet
    scheduled: int = 0  # done entries whose recheck is not due yet (not queued)
    due_within_hour: int = 0  # of the scheduled: due in the next hour

    @property
    def leased_total(self) -> int:
        return sum(self.leased.values())

    @property
    def drained(self) -> bool:
        return self.seeded and self.queued == 0 and self.leased_total == 0


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
        as opposed to a bug or bad data (fail loudly)."""
        return False

    @abstractmethod
    def commit(self, entries: list[Entry], acks: list[Lease], failures: list[Failure],
               seeded: bool = False, rechecks: list[Recheck] | None = None) -> Committed:
        """Atomically queue unseen entries, then ack (or ack and schedule a recheck of) and fail
        current leases (``seeded``: the start requests are all in, the same step)."""

    @abstractmethod
    def lease(self, node: str, count: int, lease_seconds: float) -> list[Leased]: ...

    @abstractmethod
    def release(self, leases: list[Lease]) -> int:
        """Return current leases to the queue (unstarted work at shutdown); returns how many."""

    @abstractmethod
    def renew(self, node: str, lease_seconds: float) -> None:
        """Extend every lease ``node`` holds."""

    @abstractmethod
    def leases_of(self, node: str) -> list[Lease]:
        """The leases ``node`` holds (to find leases whose reply was lost to a network error)."""

    @abstractmethod
    def reclaim_expired(self) -> int:
        """Return expired leases (of any node) to the queue; returns how many."""

    @abstractmethod
    def reclaim_node(self, node: str) -> int:
        """Return every lease ``node`` holds to the queue (that node restarted)."""

    @abstractmethod
    def is_seen(self, fingerprint: bytes) -> bool: ...

    @abstractmethod
    def counts(self) -> Counts: ...

    @abstractmethod
    def failures(self, limit: int = 100) -> list[tuple[str, str]]:
        """Recent failed entries as (payload, reason)."""

    @abstractmethod
    def dead_letters(self) -> list[DeadLetter]:
        """Every entry that failed for good, oldest first."""

    @abstractmethod
    def requeue_failed(self, ids: list[int]) -> int:
        """Put these dead letters back in the queue (history and lease count kept); returns how
        many. A completed crawl is running again, so its next node fetches exactly these."""

    @abstractmethod
    def claim_start(self, token: str, replace_token: str) -> bool:
        """Claim the start requests for the node with ``token``, if the crawl is not seeded and
        the current claim is ``replace_token`` ("" for none: the first claim; a dead claimant's
        token: a takeover). Compare-and-set: one caller wins."""

    @abstractmethod
    def begin_reset(self, expected_status: str) -> bool:
        """Compare-and-set the crawl's status from ``expected_status`` to "resetting" (one node
        of many starting on a completed crawl wins, and then calls ``reset``)."""

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
    def reset(self) -> None:
        """Forget this crawl entirely (queue, leases, seen-set, counters, nodes)."""
