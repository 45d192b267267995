"""What this process has not written to the frontier yet: new requests, and the outcomes of its
leases. One ``flush`` writes it all in one atomic ``commit`` (new requests first, so an ack is
never stored before the requests its response produced)."""

from __future__ import annotations

from dataclasses import dataclass, field

from recordhound import failpoints
from recordhound.recent import Recent
from recordhound.frontier.backend import Committed, Entry, Failure, FrontierBackend, Lease, Recheck


@dataclass(frozen=True)
class Flushed:
    committed: Committed
    queued_offered: int  # entries written (the rest of them were seen before)
    acked: int  # acks and rechecks
    retried: int
    failed: int


@dataclass
class WriteBuffer:
    entries: list[Entry] = field(default_factory=list)
    fingerprints: set[bytes] = field(default_factory=set)
    acks: list[Lease] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    rechecks: list[Recheck] = field(default_factory=list)
    seed: bool = False  # the start requests are all buffered: mark the crawl seeded with them
    rechecked: bool = False  # the buffer holds a page fetched again (its own crash point)
    kept: list[Entry] = field(default_factory=list)  # children of the pages whose outcome waits here

    def __bool__(self) -> bool:
        return bool(self.entries or self.acks or self.failures or self.rechecks or self.seed)

    @property
    def outcomes(self) -> int:
        return len(self.acks) + len(self.failures) + len(self.rechecks)

    def leases(self) -> list[Lease]:
        """The leases whose outcome waits here (still the process's until written)."""
        return [*self.acks, *(f.lease for f in self.failures), *(r.lease for r in self.rechecks)]

    def add(self, entry: Entry) -> None:
        if entry.fingerprint is not None:
            self.fingerprints.add(entry.fingerprint)
        self.entries.append(entry)

    def flush(self, backend: FrontierBackend, writer: str = "", floor: int = 0) -> Flushed | None:
        """Write everything buffered in one commit; the buffer is emptied only once it is stored
        (take ``fingerprints`` before: they are what the commit made seen)."""
        if not self:
            return None
        failpoints.hit("frontier.before_flush")
        if self.rechecked:
            failpoints.hit("frontier.before_recheck_flush")
        committed = backend.commit(self.entries, self.acks, self.failures, self.seed, self.rechecks, writer, floor)
        if committed.regressed:
            return Flushed(committed, 0, 0, 0, 0)  # nothing was written: the buffer stays as it is
        failpoints.hit("frontier.after_flush")
        retried = sum(1 for f in self.failures if f.retry_in is not None)
        flushed = Flushed(committed, len(self.entries), len(self.acks) + len(self.rechecks), retried,
                          len(self.failures) - retried)
        if retried:
            failpoints.hit("frontier.after_retry_flush")
        self.entries, self.acks, self.failures, self.rechecks, self.kept = [], [], [], [], []
        self.fingerprints = set()
        self.seed = self.rechecked = False
        return flushed


class SeenCache(Recent[bytes]):
    """The most recent fingerprints this process wrote: a duplicate found here is dropped
    without serializing it or asking the backend. Cleared after a reconnect: a store restored
    from an older snapshot may have lost what this process wrote last."""
