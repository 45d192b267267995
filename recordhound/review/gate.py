"""The gate in front of the product DB: which items go in, which wait for a review, which can't.

For every artist, label and style name of a batch: a known entity (by synonym or matching key)
is used straight away; a name a reviewer already decided follows that decision (from a trusted
source too); a trusted source creates the rest; otherwise the item is parked under a pending entry per unknown name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection

from recordhound.db import entities
from recordhound.items import Release
from recordhound.review.items import release_doc
from recordhound.review.queue import ENTITY_KINDS, Origin, Parked, ReviewQueue, Unknown
from recordhound.text import name_key

NAMES: dict[str, Callable[[Release], list[str]]] = {
    "artist": lambda item: item.artists,
    "label": lambda item: [item.label] if item.label else [],
    "style": lambda item: item.styles,
}


@dataclass
class Plan:
    writable: list[Release] = field(default_factory=list)
    parked: list[Parked] = field(default_factory=list)
    rejected: list[tuple[str, dict[str, Any], Origin, str]] = field(default_factory=list)
    ids: dict[str, dict[str, int]] = field(default_factory=dict)  # kind → spelling → entity id
    created: Counter[str] = field(default_factory=Counter)


def item_key(source_id: int, item: Release) -> str:
    return f"{source_id}:{item.external_id}"


def origin(source_id: int, source_name: str, item: Release) -> Origin:
    return Origin(source_id, source_name, f"line {item.line}" if item.line else item.url)


def plan(conn: Connection, queue: ReviewQueue, source_id: int, source_name: str,
         items: list[Release], trusted: bool) -> Plan:
    result = Plan()
    pending: dict[str, dict[str, list[str]]] = {}
    skipped: dict[str, set[str]] = {}
    for kind in ENTITY_KINDS:
        ids, unknown = entities.match(conn, kind, (n for item in items for n in NAMES[kind](item)))
        skipped[kind] = set()
        if unknown:  # a decision is followed whether the source is trusted or not
            for key, entry in queue.decisions(kind, list(unknown)).items():
                if entry.get("entity_id"):
                    decided = dict.fromkeys(unknown.pop(key), int(entry["entity_id"]))
                    entities.attach(conn, kind, decided)
                    ids.update(decided)
                else:
                    del unknown[key]
                    skipped[kind].add(key)
        if trusted:
            created = entities.create_unknown(conn, kind, unknown)
            result.created[kind] += len(unknown)
            ids.update(created)
            unknown = {}
        result.ids[kind] = ids
        pending[kind] = unknown
    for item in items:
        waits = [Unknown(kind, name_key(n), n) for kind in ENTITY_KINDS for n in NAMES[kind](item)
                 if name_key(n) in pending[kind]]
        where = origin(source_id, source_name, item)
        kept = _without_skipped(item, skipped)
        if not kept.artists:  # doomed whatever the names still pending become: rejected now
            reason = f"every artist was skipped in review ({', '.join(item.artists)}): a release needs one"
            result.rejected.append((item_key(source_id, item), release_doc(item), where, reason))
        elif waits:
            result.parked.append(Parked(item_key(source_id, item), release_doc(item), where, waits))
        else:
            result.writable.append(kept)
    return result


def _without_skipped(item: Release, skipped: dict[str, set[str]]) -> Release:
    if not any(skipped.values()):
        return item
    return replace(
        item,
        artists=[a for a in item.artists if name_key(a) not in skipped["artist"]],
        label=None if item.label and name_key(item.label) in skipped["label"] else item.label,
        styles=[s for s in item.styles if name_key(s) not in skipped["style"]],
    )
