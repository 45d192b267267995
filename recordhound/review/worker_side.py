"""The apply worker's side of the review queue: lease a decision, settle its entry, ack or fail."""

from __future__ import annotations

from recordhound.review.docstore import Doc, Txn
from recordhound.review.records import (
    APPROVED, COMPLETED, ENTRIES, FAILED, PENDING, PRICES, PROCESSING, Side, _entry, _now,
)


class WorkerSide(Side):
    def lease(self, worker: str, lease_seconds: float) -> Doc | None:
        """The oldest approved job, leased to ``worker``; expired leases come back first."""
        def work(txn: Txn) -> Doc | None:
            now = _now()
            for key, job in txn.all(PROCESSING).items():
                if job["deadline"] < now:
                    txn.move(PROCESSING, APPROVED, key, {**job, "worker": None})
            approved = txn.all(APPROVED)
            if not approved:
                return None
            key = min(approved, key=int)
            job = {**approved[key], "worker": worker, "deadline": now + lease_seconds,
                   "attempts": approved[key]["attempts"] + 1}
            txn.move(APPROVED, PROCESSING, key, job)
            return job
        return self.store.run(work)

    def settle(self, job: Doc, outcome: Doc) -> None:
        """The decision's product-DB writes are committed: the entry is decided from now on."""
        def work(txn: Txn) -> None:
            entry = _entry(txn, job["entry_id"])
            txn.delete(PRICES if entry["kind"] == "price" else PENDING, str(entry["id"]))
            txn.put(ENTRIES, str(entry["id"]), {**entry, **outcome, "decided_at": _now()})
        self.store.run(work)

    def complete(self, job: Doc, result: Doc) -> bool:
        """Ack: the job is done. False if the lease was lost (another worker has it now)."""
        def work(txn: Txn) -> bool:
            if txn.get(PROCESSING, str(job["id"])) is None:
                return False
            txn.move(PROCESSING, COMPLETED, str(job["id"]),
                     {**job, "result": result, "finished_at": _now(), "last_error": None})
            return True
        return self.store.run(work)

    def fail(self, job: Doc, error: str) -> None:
        def work(txn: Txn) -> None:
            entry = _entry(txn, job["entry_id"])
            txn.move(PROCESSING, FAILED, str(job["id"]), {**job, "last_error": error, "failed_at": _now()})
            txn.put(ENTRIES, str(entry["id"]), {**entry, "status": "failed", "last_error": error,
                                                "attempts": entry.get("attempts", 0) + 1})
        self.store.run(work)
