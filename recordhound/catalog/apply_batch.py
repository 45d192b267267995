"""Many decisions on names in one product-DB transaction, written as one by one would write them.

The apply worker leases a batch of jobs (``RECORDHOUND_REVIEW_BATCH_SIZE``) and hands the
artist/label/style ones here: one query per type finds the entities merges name and the
names approvals need, new entities are inserted in one statement per type in job order, and
the spellings become synonyms in job order, so ids are the ones the jobs would get one at a
time (consecutive, nothing burned). A job that cannot be written (a merge into an entity
deleted since the decision) raises: the worker rolls the batch back and applies its jobs one
by one, so that job alone fails, with its reason.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from recordhound.db import entities
from recordhound.review.queue import ReviewError
from recordhound.text import name_key

Doc = dict[str, Any]
STATUS = {"approve": "approved", "edit": "edited", "merge": "merged", "skip": "skipped"}


def write_batch(conn: Connection, jobs: list[Doc], entries: dict[int, Doc]) -> list[Doc]:
    """Outcomes ({status, entity_id}) in job order; needs the write lock (``lock_for_writing``)."""
    targets: list[tuple[str, str | int | None]] = []  # per job: (kind, name key to find or create | into | None)
    wanted: dict[str, dict[str, str]] = {}  # kind → name key → name, in job order
    merges: dict[str, set[int]] = {}
    spelled = _spelled(conn, jobs, entries)  # kind → spelling → its entity (id, or the key of one this batch creates)
    for job in jobs:
        entry = entries[int(job["entry_id"])]
        kind, action = entry["kind"], job["action"]
        target: str | int | None = None
        if action == "merge":
            merges.setdefault(kind, set()).add(int(job["into"]))
            target = int(job["into"])
        elif action in ("approve", "edit"):
            name = edited_or_entry_name(job, entry)
            target = spelled.setdefault(kind, {}).get(name)  # a synonym first (the gate's order), then the key
            if target is None:
                target = name_key(name)
                wanted.setdefault(kind, {}).setdefault(target, name)
        targets.append((kind, target))
        if target is not None:  # its spellings are synonyms for the jobs after it, as one by one
            given = [] if action == "merge" else [edited_or_entry_name(job, entry)]
            for spelling in given + own_spellings(entry):
                spelled.setdefault(kind, {}).setdefault(spelling, target)
    ids = {kind: _find_or_create(conn, kind, names) for kind, names in wanted.items()}
    for kind, into in merges.items():
        missing = sorted(into - entities.existing(conn, kind, into))
        if missing:
            raise ReviewError(f"cannot merge into {kind} {missing[0]}: no such {kind}")
    outcomes = []
    for job, (kind, target) in zip(jobs, targets):
        entity_id = target if isinstance(target, int) else ids[kind][target] if target else None
        outcomes.append({"status": STATUS[job["action"]], "entity_id": entity_id})
    _attach(conn, jobs, entries, outcomes)
    return outcomes


def own_spellings(entry: Doc) -> list[str]:
    """The spellings a decision on ``entry`` makes synonyms. An entry held before migration 0013 under the
    empty key may list names of punctuation only that are not one name ("!!!" and "???"): only those of its
    own name's key; the items of the others go through the gate again and wait under entries of their own."""
    if entry.get("name_key") != "" or not entry.get("name"):
        return list(entry["spellings"])
    key = name_key(str(entry["name"]))
    return [s for s in entry["spellings"] if name_key(s) == key]


def edited_or_entry_name(job: Doc, entry: Doc) -> str:
    """The name an approval or an edit gives (both apply paths)."""
    return str(job["fields"].get("name", entry["name"])).strip() if job["action"] == "edit" else str(entry["name"])


def _spelled(conn: Connection, jobs: list[Doc], entries: dict[int, Doc]) -> dict[str, dict[str, str | int]]:
    """The names approvals and edits give that are already synonyms: kind → spelling → entity id."""
    names: dict[str, set[str]] = {}
    for job in jobs:
        if job["action"] in ("approve", "edit"):
            entry = entries[int(job["entry_id"])]
            names.setdefault(entry["kind"], set()).add(edited_or_entry_name(job, entry))
    return {kind: dict(entities.by_spellings(conn, kind, found)) for kind, found in names.items()}


def _find_or_create(conn: Connection, kind: str, names: dict[str, str]) -> dict[str, int]:
    found = entities.by_keys(conn, kind, names)
    new = [(key, name) for key, name in names.items() if key not in found]
    return {**found, **entities.create_in_order(conn, kind, new)}


def _attach(conn: Connection, jobs: list[Doc], entries: dict[int, Doc], outcomes: list[Doc]) -> None:
    """Every job's spellings (a new entity's own name first) become synonyms, once, in job order."""
    per_kind: dict[str, list[tuple[str, int]]] = {}
    for job, outcome in zip(jobs, outcomes):
        if outcome["entity_id"] is None:
            continue
        entry = entries[int(job["entry_id"])]
        own = [job["fields"]["name"].strip()] if job["action"] == "edit" else [entry["name"]]
        spellings = own + sorted(own_spellings(entry)) if job["action"] != "merge" else sorted(own_spellings(entry))
        per_kind.setdefault(entry["kind"], []).extend((s, int(outcome["entity_id"])) for s in spellings)
    for kind, pairs in per_kind.items():
        known = entities.known_spellings(conn, kind, sorted({s for s, _ in pairs}))
        fresh: dict[str, int] = {}
        for spelling, entity_id in pairs:
            if spelling not in known and spelling not in fresh:
                fresh[spelling] = entity_id
        entities.attach_in_order(conn, kind, list(fresh.items()))
