"""The apply worker's side of the review queue: lease a decision, settle its entry, ack or fail."""

from __future__ import annotations

from recordhound.review.docstore import Doc, Txn
from recordhound.review.records import (
    APPROVED, COMPLETED, DECIDED, ENTRIES, FAILED, PENDING, PRICES, PROCESSING, Side, _entry, _now,
)


class WorkerSide(Side):
    def lease(self, worker: str, lease_seconds: float) -> Doc | None:
        """The oldest approved job, leased to ``worker``; expired leases come back first."""
        found = self.lease_many(worker, lease_seconds, 1)
        return found[0] if found else None

    def lease_many(self, worker: str, lease_seconds: float, limit: int) -> list[Doc]:
        """Up to ``limit`` of the oldest approved jobs (oldest first), leased in one transaction."""
        def work(txn: Txn) -> list[Doc]:
            now = _now()
            for key, job in txn.all(PROCESSING).items():
                if job["deadline"] < now:
                    txn.move(PROCESSING, APPROVED, key, {**job, "worker": None})
            approved = txn.all(APPROVED)
            leased = []
            for key in sorted(approved, key=int)[:limit]:
                job = {**approved[key], "worker": worker, "deadline": now + lease_seconds,
                       "attempts": approved[key]["attempts"] + 1}
                txn.move(APPROVED, PROCESSING, key, job)
                leased.append(job)
            return leased
        return self.store.run(work)

    def settle(self, job: Doc, outcome: Doc) -> None:
        """The decision's product-DB writes are committed: the entry is decided from now on."""
        self.settle_many([(job, outcome)])

    def settle_many(self, settled: list[tuple[Doc, Doc]]) -> None:
        def work(txn: Txn) -> None:
            entries = txn.get_many(ENTRIES, [str(job["entry_id"]) for job, _ in settled])
            for job, outcome in settled:
                entry = entries.get(str(job["entry_id"])) or _entry(txn, job["entry_id"])
                txn.delete(PRICES if entry["kind"] == "price" else PENDING, str(entry["id"]))
                txn.put(ENTRIES, str(entry["id"]), {**entry, **outcome, "decided_at": _now()})
        if settled:
            self.store.run(work)

    def complete(self, job: Doc, result: Doc) -> bool:
        """Ack: the job is done. False if the lease was lost (another worker has it now)."""
        return bool(self.complete_many([(job, result)]))

    def complete_many(self, done: list[tuple[Doc, Doc]]) -> list[int]:
        """Ack many jobs in one transaction; returns the ids acked (a lost lease is not)."""
        def work(txn: Txn) -> list[int]:
            held = txn.get_many(PROCESSING, [str(job["id"]) for job, _ in done])
            acked = []
            for job, result in done:
                if (found := held.get(str(job["id"]))) is not None and found["worker"] == job["worker"]:
                    txn.move(PROCESSING, COMPLETED, str(job["id"]),
                             {**job, "result": result, "finished_at": _now(), "last_error": None})
                    acked.append(int(job["id"]))
            return acked
        return self.store.run(work) if done else []

    def renew(self, jobs: list[Doc], lease_seconds: float) -> list[Doc]:
        """Of ``jobs``, those still leased to their worker (not acked, failed, or taken over by another
        worker once their lease ran out), their leases renewed: what a worker back from an outage may
        still write."""
        def work(txn: Txn) -> list[Doc]:
            held = txn.get_many(PROCESSING, [str(job["id"]) for job in jobs])
            kept = []
            for job in jobs:
                if (found := held.get(str(job["id"]))) is not None and found["worker"] == job["worker"]:
                    renewed = {**found, "deadline": _now() + lease_seconds}
                    txn.put(PROCESSING, str(job["id"]), renewed)
                    kept.append(renewed)
            return kept
        return self.store.run(work) if jobs else []

    def give_back(self, jobs: list[Doc]) -> list[int]:
        """Of ``jobs``, those still leased to their worker back to the approved queue, as if their lease
        had run out (a worker that stops because a store refuses it): the ids given back."""
        def work(txn: Txn) -> list[int]:
            held = txn.get_many(PROCESSING, [str(job["id"]) for job in jobs])
            given = []
            for job in jobs:
                if (found := held.get(str(job["id"]))) is not None and found["worker"] == job["worker"]:
                    txn.move(PROCESSING, APPROVED, str(job["id"]), {**found, "worker": None})
                    given.append(int(job["id"]))
            return given
        return self.store.run(work) if jobs else []

    def fail(self, job: Doc, error: str) -> None:
        """The job failed (``review retry`` runs it again). Its entry fails with it, to be decided
        again, unless it was settled already: its writes are committed, so the decision stands. A job
        no longer leased to its worker (its lease ran out, another worker has it) is left alone, and
        so is an entry decided again since (its decision is another job)."""
        def work(txn: Txn) -> None:
            held = txn.get(PROCESSING, str(job["id"]))
            if held is None or held["worker"] != job["worker"]:
                return
            entry = _entry(txn, job["entry_id"])
            txn.move(PROCESSING, FAILED, str(job["id"]), {**job, "last_error": error, "failed_at": _now()})
            if entry.get("decision") not in (None, job["id"]):
                return
            status = entry["status"] if entry["status"] in DECIDED else "failed"
            txn.put(ENTRIES, str(entry["id"]), {**entry, "status": status, "last_error": error,
                                                "attempts": entry.get("attempts", 0) + 1})
        self.store.run(work)
