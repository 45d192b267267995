"""The review queue's vocabulary: collections, entry kinds and actions, and the records the
crawler hands it (what was seen where, what waits for what). Shared by the three sides of the
queue (``crawl_side``, ``reviewer_side``, ``worker_side``); the layout is in ``queue.py``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from recordhound.exceptions import RecordhoundError
from recordhound.review.docstore import Doc, DocStore, Txn

ENTITY_KINDS = ("artist", "label", "style")
KINDS = (*ENTITY_KINDS, "price")
ACTIONS = {"artist": ("approve", "merge", "skip", "edit"), "label": ("approve", "merge", "skip", "edit"),
           "style": ("approve", "merge", "skip", "edit"), "price": ("approve", "skip")}
EDITABLE = ("name",)
SOURCES_KEPT = 20  # origins remembered per entry (the count of waiting items is exact)
DECIDED = ("approved", "merged", "edited", "skipped", "rejected", "superseded")
PRICE_CHANGE = ("old_price", "old_currency", "new_price", "new_currency")  # a price entry's whole change
REVISION = "revision"  # a price entry's change as viewed: 1, bumped each time a crawl rewrites the change

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


class Side:
    """What every side of the queue works on: the one document store."""

    def __init__(self, store: DocStore) -> None:
        self.store = store


def _entry(txn: Txn, entry_id: int | str) -> Doc:
    entry = txn.get(ENTRIES, str(entry_id))
    if entry is None:
        raise ReviewError(f"no review entry {entry_id} (see `recordhound review list`)")
    return entry


def _with_count(txn: Txn, entry: Doc) -> Doc:
    if entry["kind"] == "price":
        return {**entry, "waiting": 0, REVISION: revision(entry)}
    return {**entry, "waiting": txn.count(waiting(entry["id"]))}


def supersede_failed(txn: Txn, failed: Doc, **result: Any) -> None:
    """A failed job done with (a new decision replaces it, or a crawl withdrew its change): moved to
    completed as superseded, with what superseded it."""
    txn.move(FAILED, COMPLETED, str(failed["id"]), {**failed, "result": {"status": "superseded", **result},
                                                    "finished_at": _now()})


def revision(entry: Doc) -> int:
    """The revision of a price entry's change (an entry held before revisions were kept: 1)."""
    return int(entry.get(REVISION) or 1)


def shown_change(change: Doc) -> str:
    """A price change as a reviewer reads it: ``100.00 EUR → 120.00 EUR``."""
    old = f"{change['old_price']} {change['old_currency'] or ''}".strip()
    new = f"{change['new_price']} {change['new_currency'] or ''}".strip()
    return f"{old} → {new}"


def changed_since_viewed(entry: Doc, viewed: int | None) -> str | None:
    """Why a decision made on revision ``viewed`` of a price change is refused (a crawl rewrote the change
    since), or None: it is the change viewed, the entry is no price change, or no revision was given."""
    if viewed is None or entry["kind"] != "price" or int(viewed) == revision(entry):
        return None
    return (f"price change {entry['id']} changed since you viewed it: now {shown_change(entry)}; "
            f"view it again")
