"""The reviewer's side of the review queue: list and show entries, decide, look at jobs, retry,
expire. Called by `recordhound review` and the web admin."""

from __future__ import annotations

from dataclasses import dataclass, field

from recordhound.db import entities
from recordhound.review.docstore import Doc, Txn
from recordhound.review.records import (
    ACTIONS, APPROVED, COMPLETED, EDITABLE, ENTRIES, FAILED, INDEX, PARKED, PENDING, PRICE_CHANGE, PRICES, PROCESSING,
    REJECTED, REVISION, ReviewError, Side, _entry, _now, _with_count, changed_since_viewed, index_key,
    supersede_failed, revision, waiting,
)
from recordhound.text import name_key


@dataclass(frozen=True)
class Decision:
    """One reviewer's decision on one entry, as the queue records it."""

    entry_id: int
    action: str
    into: int | None = None
    fields: dict[str, str] = field(default_factory=dict)
    revision: int | None = None  # a price change: the revision the reviewer viewed (None: the current one)


class ReviewerSide(Side):
    def entries(self, kind: str | None = None, source: str | None = None) -> list[Doc]:
        """Undecided entries (oldest first), with how many items wait on each; an entry with a
        decision waiting to be applied (``queued``) is no longer listed."""
        def work(txn: Txn) -> list[Doc]:
            ids = [] if kind == "price" else list(txn.all(PENDING))
            ids += [] if kind not in (None, "price") else list(txn.all(PRICES))
            docs = txn.get_many(ENTRIES, ids)
            found = []
            for entry in docs.values():
                if entry["status"] == "queued" or (kind and entry["kind"] != kind):
                    continue
                if source and not any(s["source_name"] == source for s in entry.get("sources", ())):
                    continue
                found.append(_with_count(txn, entry))
            return sorted(found, key=lambda e: int(e["id"]))
        return self.store.run(work)

    def entry(self, entry_id: int) -> Doc:
        def work(txn: Txn) -> Doc:
            return _with_count(txn, _entry(txn, entry_id))
        return self.store.run(work)

    def parked_items(self, entry_id: int) -> list[Doc]:
        return self.parked_items_many([entry_id])

    def parked_items_many(self, entry_ids: list[int]) -> list[Doc]:
        """The items these entries hold back, each once (an item may wait on several)."""
        def work(txn: Txn) -> list[Doc]:
            keys = list(dict.fromkeys(k for entry_id in entry_ids for k in txn.all(waiting(entry_id))))
            return list(txn.get_many(PARKED, keys).values())
        return self.store.run(work)

    def entries_by_id(self, entry_ids: list[int]) -> dict[int, Doc]:
        """Entries by id (one read); a missing id is absent from the result."""
        def work(txn: Txn) -> dict[int, Doc]:
            return {int(k): v for k, v in txn.get_many(ENTRIES, [str(i) for i in entry_ids]).items()}
        return self.store.run(work)

    def decide(self, entry_id: int, action: str, into: int | None = None,
               fields: dict[str, str] | None = None, revision: int | None = None) -> Doc:
        """Record a decision as a job in the approved queue; the apply worker carries it out.

        ``revision``: the revision of the price change the reviewer viewed; when a crawl has rewritten the
        change since, nothing is recorded (ReviewError). Without it, the current change is decided (the
        job's ``change`` says which)."""
        return self.store.run(lambda txn: _decide(txn, _entry(txn, entry_id), action, into, fields, revision))

    def decide_many(self, decisions: list[Decision], skip_decided: bool = False) -> tuple[list[Doc], list[int]]:
        """Many decisions in one transaction: all are recorded, or (an error) none.

        With ``skip_decided`` an entry decided meanwhile (another reviewer), or a price change rewritten
        by a crawl since the revision its decision carries, is passed over and returned in the second
        list instead of failing the lot."""
        def work(txn: Txn) -> tuple[list[Doc], list[int]]:
            found = txn.get_many(ENTRIES, [str(d.entry_id) for d in decisions])
            jobs, passed = [], []
            for d in decisions:
                entry = found.get(str(d.entry_id)) or _entry(txn, d.entry_id)  # raises: no such entry
                if skip_decided and (entry["status"] not in ("pending", "failed")
                                     or changed_since_viewed(entry, d.revision)):
                    passed.append(d.entry_id)
                    continue
                jobs.append(_decide(txn, entry, d.action, d.into, d.fields, d.revision))
            return jobs, passed
        return self.store.run(work)

    def jobs(self, state: str) -> list[Doc]:
        """Jobs in one state: approved, processing, completed or failed (oldest first)."""
        collection = {"approved": APPROVED, "processing": PROCESSING, "completed": COMPLETED,
                      "failed": FAILED}[state]
        return sorted(self.store.run(lambda txn: list(txn.all(collection).values())),
                      key=lambda j: int(j["id"]))

    def retry(self, job_id: int) -> Doc:
        """A failed job goes back to the approved queue (an expired entry back to pending)."""
        def work(txn: Txn) -> Doc:
            job = txn.get(FAILED, str(job_id))
            if job is None:
                raise ReviewError(f"job {job_id} is not in the failed queue (see `recordhound review failed`)")
            entry = _entry(txn, job["entry_id"])
            if job["action"] == "expire" and entry["kind"] == "price":
                ref = txn.get(INDEX, index_key("price", str(entry["offer_id"])))
                if ref is not None and int(ref["id"]) != int(entry["id"]):
                    raise ReviewError(f"entry {entry['id']} expired and a crawl has held a newer price change of "
                                      f"offer {entry['external_id']} since (entry {ref['id']}): decide that one")
            txn.delete(FAILED, str(job_id))
            if job["action"] == "expire":
                txn.put(ENTRIES, str(entry["id"]), {**entry, "status": "pending", "created_at": _now()})
                txn.put(PRICES if entry["kind"] == "price" else PENDING, str(entry["id"]), {"kind": entry["kind"]})
                return {**job, "retried_at": _now()}
            job = {**job, "retried_at": _now()}
            txn.put(APPROVED, str(job_id), job)
            txn.put(ENTRIES, str(entry["id"]), {**entry, "status": "queued", "decision": job["id"]})
            return job
        return self.store.run(work)

    def expire(self, ttl_seconds: float) -> list[int]:
        """Move pending entries older than the TTL to ``failed`` with the reason (never deleted)."""
        def work(txn: Txn) -> list[int]:
            cutoff = _now() - ttl_seconds
            moved = []
            for collection in (PENDING, PRICES):
                for entry in txn.get_many(ENTRIES, list(txn.all(collection))).values():
                    if entry["status"] != "pending" or entry["created_at"] > cutoff:
                        continue
                    job = {"id": txn.next_id(), "entry_id": entry["id"], "kind": entry["kind"],
                           "name": entry.get("name"), "action": "expire", "into": None, "fields": {},
                           "created_at": _now(), "attempts": entry.get("attempts", 0),
                           "last_error": f"pending for more than {ttl_seconds:g} s "
                                         f"(RECORDHOUND_REVIEW_TTL_SECONDS) without a decision"}
                    txn.delete(collection, str(entry["id"]))
                    txn.put(FAILED, str(job["id"]), job)
                    txn.put(ENTRIES, str(entry["id"]), {**entry, "status": "expired", "decision": job["id"]})
                    moved.append(int(entry["id"]))
            return moved
        return self.store.run(work)

    def counts(self) -> dict[str, int]:
        def work(txn: Txn) -> dict[str, int]:
            return {"pending": txn.count(PENDING), "price_changes": txn.count(PRICES),
                    "approved": txn.count(APPROVED), "processing": txn.count(PROCESSING),
                    "completed": txn.count(COMPLETED), "failed": txn.count(FAILED),
                    "parked": txn.count(PARKED), "rejected": txn.count(REJECTED)}
        return self.store.run(work)

    def rejected(self) -> list[Doc]:
        return self.store.run(lambda txn: [{"key": k, **v} for k, v in sorted(txn.all(REJECTED).items())])


def _decide(txn: Txn, entry: Doc, action: str, into: int | None, fields: dict[str, str] | None,
            viewed: int | None = None) -> Doc:
    entry_id = int(entry["id"])
    if entry["status"] not in ("pending", "failed"):
        raise ReviewError(f"entry {entry_id} is {entry['status']}, not pending"
                          + (f" (job {entry['decision']})" if entry.get("decision") else ""))
    if stale := changed_since_viewed(entry, viewed):
        raise ReviewError(stale)
    _check_decision(entry, action, into, fields)
    job = {"id": txn.next_id(), "entry_id": entry_id, "kind": entry["kind"],
           "name": entry.get("name"), "action": action, "into": into, "fields": fields or {},
           "created_at": _now(), "attempts": 0, "last_error": None}
    if entry["kind"] == "price":  # what the reviewer decided on: the apply writes this change, no other
        job["change"] = {k: entry[k] for k in PRICE_CHANGE}
        job[REVISION] = revision(entry)
    failed = txn.get(FAILED, str(entry.get("decision")))
    if entry["status"] == "failed" and failed is not None:  # a new decision replaces the failed one
        supersede_failed(txn, failed, by_job=job["id"])
    txn.put(APPROVED, str(job["id"]), job)
    txn.put(ENTRIES, str(entry_id), {**entry, "status": "queued", "decision": job["id"]})
    return job


def _check_decision(entry: Doc, action: str, into: int | None, fields: dict[str, str] | None) -> None:
    allowed = ACTIONS[entry["kind"]]
    if action not in allowed:
        raise ReviewError(f"a {entry['kind']} entry can be decided with {', '.join(allowed)}, not {action!r}")
    if action == "merge" and into is None:
        raise ReviewError("merge needs the id of the entity to merge into (--into ID)")
    if action == "edit":
        unknown = sorted(set(fields or {}) - set(EDITABLE))
        if unknown or not fields:
            raise ReviewError(f"edit can set {', '.join(EDITABLE)}; got {', '.join(unknown) or 'nothing'}")
        if not str(fields.get("name", "")).strip():
            raise ReviewError("edit: name must not be empty")
        _check_name_fits(entry["kind"], str(fields["name"]).strip())


def _check_name_fits(kind: str, name: str) -> None:
    """The product DB's columns hold the edited name and its matching key (SQLite would store a longer
    one, PostgreSQL would fail the apply): refused when decided, with the reason."""
    name_limit, key_limit = entities.name_limits(kind)
    if len(name) > name_limit:
        raise ReviewError(f"edit: the new {kind} name is {len(name)} characters long; "
                          f"the column holds at most {name_limit}")
    if len(key := name_key(name)) > key_limit:
        raise ReviewError(f"edit: the new {kind} name is {len(name)} characters long but its matching key is "
                          f"{len(key)}; the column holds at most {key_limit}")
