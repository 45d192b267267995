"""The review queue: pending entities and price changes, decisions, and the jobs that apply them.

Written once over :class:`~recordhound.review.docstore.DocStore`, so the embedded and the Redis
queue behave the same (one contract test suite runs on both). Collections:

``review:entries``      every entry by id: pending entities (artist/label/style) and price changes
``tasks:pending``       ids of entities waiting for a decision
``tasks:price_changes`` ids of price changes waiting for a decision
``tasks:approved``      decisions (jobs) the apply worker has not taken yet
``tasks:processing``    jobs leased by an apply worker (with a deadline)
``tasks:completed``     jobs applied, with what they did
``tasks:failed``        jobs that failed (error, attempts) and entries whose time-to-live ran out
``review:index``        "kind|name key" (or "price|offer id") → entry id
``review:parked``       items waiting for entities, by "source id:external id"
``review:waiting:ID``   the parked items entry ID holds back
``review:rejected``     items that lost a required field to a skip, with the reason
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from recordhound.exceptions import RecordhoundError
from recordhound.review.docstore import Doc, DocStore, Txn
from recordhound.text import preferred_spelling

ENTITY_KINDS = ("artist", "label", "style")
KINDS = (*ENTITY_KINDS, "price")
ACTIONS = {"artist": ("approve", "merge", "skip", "edit"), "label": ("approve", "merge", "skip", "edit"),
           "style": ("approve", "merge", "skip", "edit"), "price": ("approve", "skip")}
EDITABLE = ("name",)
SOURCES_KEPT = 20  # origins remembered per entry (the count of waiting items is exact)
DECIDED = ("approved", "merged", "edited", "skipped", "rejected", "superseded")

ENTRIES, PENDING, PRICES = "review:entries", "tasks:pending", "tasks:price_changes"
APPROVED, PROCESSING, COMPLETED, FAILED = "tasks:approved", "tasks:processing", "tasks:completed", "tasks:failed"
INDEX, PARKED, REJECTED = "review:index", "review:parked", "review:rejected"


class ReviewError(RecordhoundError):
    """A review command that cannot be carried out (unknown id, wrong state, bad field)."""


def waiting(entry_id: int | str) -> str:
    return f"review:waiting:{entry_id}"


@dataclass(frozen=True)
class Origin:
    """Where a name or item was seen: the source and the page URL or the file's line."""

    source_id: int
    source_name: str
    ref: str

    def doc(self) -> Doc:
        where: Doc = {"parsed_line": int(self.ref[5:])} if self.ref.startswith("line ") else {"url": self.ref}
        return {"source_id": self.source_id, "source_name": self.source_name, "ref": self.ref, **where}


@dataclass(frozen=True)
class Unknown:
    kind: str
    name_key: str
    spelling: str


@dataclass
class Parked:
    """An item held back until every entity it waits for is decided."""

    key: str  # "source id:external id"
    item: Doc
    origin: Origin
    waits: list[Unknown] = field(default_factory=list)


@dataclass(frozen=True)
class PriceHold:
    offer_id: int
    external_id: str
    url: str
    old_price: str | None
    new_price: str | None
    old_currency: str | None
    new_currency: str | None
    change_pct: float | None
    origin: Origin


def _now() -> float:
    return time.time()


def index_key(kind: str, name_key: str) -> str:
    return f"{kind}|{name_key}"


class ReviewQueue:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    def close(self) -> None:
        self.store.close()

    # --- the crawler's side ---------------------------------------------------------

    def decisions(self, kind: str, name_keys: list[str]) -> dict[str, Doc]:
        """Decided entries among these names: name key → entry (status, entity_id)."""
        def work(txn: Txn) -> dict[str, Doc]:
            ids = txn.get_many(INDEX, [index_key(kind, k) for k in name_keys])
            entries = txn.get_many(ENTRIES, [str(doc["id"]) for doc in ids.values()])
            found = {}
            for ikey, doc in ids.items():
                entry = entries.get(str(doc["id"]))
                if entry and entry["status"] in DECIDED:
                    found[ikey.split("|", 1)[1]] = entry
            return found
        return self.store.run(work)

    def park(self, items: list[Parked], suggest: Callable[[str, str], list[Doc]]) -> list[Parked]:
        """Hold items back under their pending entries (created on first sight).

        Returns the items not parked because one of their entries was decided meanwhile:
        the caller resolves them again (the decision is visible now)."""
        new_keys = self.store.run(lambda txn: _unindexed(txn, items))
        suggestions = {key: suggest(key[0], key[2]) for key in new_keys}  # outside the transaction
        return self.store.run(lambda txn: _park(txn, items, suggestions))

    def unpark(self, item_keys: list[str]) -> None:
        """Items that were stored or rejected: no entry holds them any more."""
        def work(txn: Txn) -> None:
            for key, doc in txn.get_many(PARKED, item_keys).items():
                for entry_id in doc["waits"]:
                    txn.delete(waiting(entry_id), key)
                txn.delete(PARKED, key)
        if item_keys:
            self.store.run(work)

    def reject(self, rejected: list[tuple[str, Doc, Origin, str]]) -> None:
        """Items that cannot enter the product DB: (item key, item, origin, reason)."""
        def work(txn: Txn) -> None:
            for key, item, origin, reason in rejected:
                txn.put(REJECTED, key, {"item": item, **origin.doc(), "reason": reason, "at": _now()})
        if rejected:
            self.store.run(work)

    def hold_prices(self, holds: list[PriceHold]) -> int:
        """Price changes above the threshold wait for a decision; one entry per offer.

        Returns how many are (still) waiting; a change to a price already rejected is not asked again."""
        def work(txn: Txn) -> int:
            held = 0
            for hold in holds:
                ikey = index_key("price", str(hold.offer_id))
                ref = txn.get(INDEX, ikey)
                entry = txn.get(ENTRIES, str(ref["id"])) if ref else None
                if entry and entry["status"] == "rejected" and entry["new_price"] == hold.new_price:
                    continue
                if entry is None or entry["status"] in DECIDED:
                    entry = {"id": txn.next_id(), "kind": "price", "created_at": _now(), "attempts": 0,
                             "last_error": None, "status": "pending", "decision": None}
                    txn.put(INDEX, ikey, {"id": entry["id"]})
                    txn.put(PRICES, str(entry["id"]), {"kind": "price"})
                entry.update({
                    "offer_id": hold.offer_id, "external_id": hold.external_id, "url": hold.url,
                    "old_price": hold.old_price, "new_price": hold.new_price,
                    "old_currency": hold.old_currency, "new_currency": hold.new_currency,
                    "change_pct": hold.change_pct, "sources": [hold.origin.doc()],
                    "name": f"offer {hold.external_id}: {hold.old_price} → {hold.new_price}"})
                txn.put(ENTRIES, str(entry["id"]), entry)
                held += 1
            return held
        return self.store.run(work) if holds else 0

    # --- the reviewer's side --------------------------------------------------------

    def entries(self, kind: str | None = None, source: str | None = None) -> list[Doc]:
        """Undecided entries (oldest first), with how many items wait on each."""
        def work(txn: Txn) -> list[Doc]:
            ids = [] if kind == "price" else list(txn.all(PENDING))
            ids += [] if kind not in (None, "price") else list(txn.all(PRICES))
            docs = txn.get_many(ENTRIES, ids)
            found = []
            for entry in docs.values():
                if kind and entry["kind"] != kind:
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
        def work(txn: Txn) -> list[Doc]:
            return list(txn.get_many(PARKED, list(txn.all(waiting(entry_id)))).values())
        return self.store.run(work)

    def decide(self, entry_id: int, action: str, into: int | None = None,
               fields: dict[str, str] | None = None) -> Doc:
        """Record a decision as a job in the approved queue; the apply worker carries it out."""
        def work(txn: Txn) -> Doc:
            entry = _entry(txn, entry_id)
            if entry["status"] not in ("pending", "failed"):
                raise ReviewError(f"entry {entry_id} is {entry['status']}, not pending"
                                  + (f" (job {entry['decision']})" if entry.get("decision") else ""))
            _check_decision(entry, action, into, fields)
            job = {"id": txn.next_id(), "entry_id": int(entry_id), "kind": entry["kind"],
                   "name": entry.get("name"), "action": action, "into": into, "fields": fields or {},
                   "created_at": _now(), "attempts": 0, "last_error": None}
            failed = txn.get(FAILED, str(entry.get("decision")))
            if entry["status"] == "failed" and failed is not None:  # a new decision replaces the failed one
                txn.move(FAILED, COMPLETED, str(failed["id"]), {
                    **failed, "result": {"status": "superseded", "by_job": job["id"]}, "finished_at": _now()})
            txn.put(APPROVED, str(job["id"]), job)
            txn.put(ENTRIES, str(entry_id), {**entry, "status": "queued", "decision": job["id"]})
            return job
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

    # --- the apply worker's side ----------------------------------------------------

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


def _entry(txn: Txn, entry_id: int | str) -> Doc:
    entry = txn.get(ENTRIES, str(entry_id))
    if entry is None:
        raise ReviewError(f"no review entry {entry_id} (see `recordhound review list`)")
    return entry


def _with_count(txn: Txn, entry: Doc) -> Doc:
    if entry["kind"] == "price":
        return {**entry, "waiting": 0}
    return {**entry, "waiting": txn.count(waiting(entry["id"]))}


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


def _unindexed(txn: Txn, items: list[Parked]) -> set[tuple[str, str, str]]:
    """(kind, name key, a spelling) of the names that have no entry yet."""
    wanted = {index_key(u.kind, u.name_key): u for item in items for u in item.waits}
    found = txn.get_many(INDEX, list(wanted))
    return {(u.kind, u.name_key, u.spelling) for key, u in wanted.items() if key not in found}


def _park(txn: Txn, items: list[Parked], suggestions: dict[tuple[str, str, str], list[Doc]]) -> list[Parked]:
    suggested = {(kind, key): s for (kind, key, _), s in suggestions.items()}
    # one round trip each for what the loop below reads (a Redis transaction caches its reads)
    known = txn.get_many(INDEX, list({index_key(u.kind, u.name_key) for i in items for u in i.waits}))
    txn.get_many(ENTRIES, [str(ref["id"]) for ref in known.values()])
    txn.get_many(PARKED, [item.key for item in items])
    entries: dict[str, Doc] = {}
    raced: list[Parked] = []
    for item in items:
        ids = []
        for unknown in item.waits:
            entry = _sighted(txn, entries, unknown, item.origin, suggested.get((unknown.kind, unknown.name_key)))
            if entry["status"] in DECIDED:
                break
            ids.append(entry["id"])
        else:
            old = txn.get(PARKED, item.key)
            for stale in set(old["waits"] if old else ()) - set(ids):
                txn.delete(waiting(stale), item.key)
            for entry_id in ids:
                txn.put(waiting(entry_id), item.key, {})
            txn.put(PARKED, item.key, {"item": item.item, "waits": ids, **item.origin.doc(), "at": _now()})
            continue
        raced.append(item)
    for entry_id, entry in entries.items():
        txn.put(ENTRIES, entry_id, entry)
    return raced


def _sighted(txn: Txn, entries: dict[str, Doc], unknown: Unknown, origin: Origin,
             suggestions: list[Doc] | None) -> Doc:
    """The entry of a name (created on first sight), with this spelling and origin added."""
    ikey = index_key(unknown.kind, unknown.name_key)
    ref = txn.get(INDEX, ikey)
    if ref is None:
        ref = {"id": txn.next_id()}
        entry_id = ref["id"]
        txn.put(INDEX, ikey, ref)
        txn.put(PENDING, str(entry_id), {"kind": unknown.kind})
        entries[str(entry_id)] = {
            "id": entry_id, "kind": unknown.kind, "name_key": unknown.name_key, "name": unknown.spelling,
            "spellings": [], "sources": [], "created_at": _now(), "attempts": 0, "last_error": None,
            "suggestions": suggestions or [], "status": "pending", "decision": None}
    elif str(ref["id"]) not in entries:
        entries[str(ref["id"])] = _entry(txn, ref["id"])
    entry = entries[str(ref["id"])]
    if unknown.spelling not in entry["spellings"]:
        entry["spellings"].append(unknown.spelling)
        entry["name"] = preferred_spelling(entry["spellings"])
    if len(entry["sources"]) < SOURCES_KEPT and origin.doc() not in entry["sources"]:
        entry["sources"].append(origin.doc())
    return entry
