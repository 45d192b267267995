"""The lease book: what this process holds of the frontier, a cache of the store.

Every lease the process took is here, with its token (which fences every write about it), the
failed tries before it, its link kind and recheck state, and what its fetch answered; the
requests not yet handed to the engine wait in ``in_hand``. The store is the truth: after any
reconnect the scheduler reconciles the book with it (``FrontierBackend.reconcile``), and a lease
the store no longer has is dropped here, so its late outcome is never written.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from scrapy import Request

from recordhound.frontier import recrawl
from recordhound.frontier.backend import Entry, Lease, Leased
from recordhound.frontier.registry import FRONTIER_ID


@dataclass
class Held:
    """One lease of this process (its Lease made once: the renewer's list is rebuilt on every tick)."""

    lease: Lease  # (id, token): the token fences every write about it
    tries: int = 0  # failed attempts before this lease
    kind: str = ""  # the profile's link kind ("listing", "product", ...)
    state: dict[str, Any] = field(default_factory=dict)  # the recheck state it was leased with
    seen: recrawl.Seen | None = None  # what its fetch answered
    keep: dict[str, Any] = field(default_factory=dict)  # what its callback keeps in the recheck state
    children: list[Entry] = field(default_factory=list)  # what its response queued (re-sent if the store loses it)
    unanswered: bool = False  # a recheck the shop did not answer in all its tries: it keeps its schedule


class LeaseBook:
    def __init__(self) -> None:
        self._held: dict[int, Held] = {}
        self.in_hand: deque[Request] = deque()  # leased, not yet handed to the engine
        self.suspects: set[int] = set()  # of those in hand: lost by a node that died, not tried yet (suspects.py)

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, frontier_id: int) -> bool:
        return frontier_id in self._held

    def hold(self, entry: Leased, kind: str = "", state: dict[str, Any] | None = None) -> None:
        self._held[entry.id] = Held(Lease(entry.id, entry.token), entry.tries, kind, state or {})

    def hand(self, request: Request) -> None:
        self.in_hand.append(request)

    def get(self, frontier_id: int) -> Held | None:
        return self._held.get(frontier_id)

    def end(self, frontier_id: int) -> tuple[Lease, Held] | None:
        """The lease of a request whose outcome is known, taken out of the book (None: the book
        no longer holds it: the store lost it, or it was already ended)."""
        held = self._held.pop(frontier_id, None)
        return None if held is None else (held.lease, held)

    def children(self) -> list[Entry]:
        """Every child the held requests queued so far."""
        return [entry for held in list(self._held.values()) for entry in held.children]

    def leases(self) -> list[Lease]:
        """Every (id, token) this process holds: what the renewer renews and reconcile compares."""
        return [held.lease for held in list(self._held.values())]

    def drop(self, leases: list[Lease]) -> int:
        """Forget leases the store no longer has (their outcomes are not written); returns how many."""
        gone = {lease.id for lease in leases if (held := self._held.get(lease.id)) and held.lease.token == lease.token}
        for frontier_id in gone:
            del self._held[frontier_id]
        if gone:
            self.in_hand = deque(r for r in self.in_hand if r.meta[FRONTIER_ID] not in gone)
            self.suspects -= gone
        return len(gone)

    def clear(self) -> list[Lease]:
        """Take every lease out of the book (a graceful stop returns them)."""
        leases = self.leases()
        self._held.clear()
        self.in_hand.clear()
        self.suspects.clear()
        return leases
