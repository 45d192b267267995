"""Decisions on many entries at once: which entries a bulk command means, checked before any is
recorded, then recorded in batches (one queue transaction per batch).

Used by `recordhound review approve|skip|merge ID... | --all --type T --source S
--suggested-above SCORE --no-suggestion` and by the admin's bulk actions. A selection names
entries by id or picks them with filters, never both; an unknown id, a filter that cannot
match (a source the catalog does not have, a score outside 0–100) or a merge target that is
not an entity of the entry's type fails the whole call before anything is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine, select

from recordhound.db import entities
from recordhound.db.models import Source
from recordhound.review.decisions import check_merge
from recordhound.review.docstore import Doc
from recordhound.review.queue import ENTITY_KINDS, Decision, ReviewError, ReviewQueue

Progress = Callable[[int, int, float], None]  # (done, total, seconds since the start)


@dataclass(frozen=True)
class Selection:
    """The entries a bulk decision is about: ``ids``, or every pending entry the filters keep."""

    ids: tuple[int, ...] = ()
    every: bool = False
    kind: str | None = None
    source: str | None = None
    suggested_above: float | None = None  # merge: into the top suggestion when its score is above
    no_suggestion: bool = False
    revision: int | None = None  # one price change by id: the revision viewed (refused when it changed since)

    @property
    def filtered(self) -> bool:
        return self.every or bool(self.kind or self.source or self.no_suggestion)


def plan(queue: ReviewQueue, engine: Engine, selection: Selection, action: str,
         into: int | None = None) -> tuple[list[Decision], list[Doc]]:
    """The decisions a selection means, checked; and the selected entries they leave alone (a
    merge by score: no suggestion above it)."""
    _check(engine, selection, action, into)
    chosen = _by_ids(queue, selection.ids, selection.revision) if selection.ids else [
        e for e in queue.entries(selection.kind, selection.source)
        if not (selection.no_suggestion and e.get("suggestions"))]
    decisions, left = [], []
    for entry in chosen:
        target = into if action == "merge" and into is not None else _top(entry, selection.suggested_above)
        if action == "merge" and target is None:
            if selection.ids:
                raise ReviewError(f"entry {entry['id']} ({entry.get('name')!r}) has no suggestion scored above "
                                  f"{selection.suggested_above:g}: merge it with --into ID")
            left.append(entry)
            continue
        decisions.append(Decision(int(entry["id"]), action, target if action == "merge" else None,
                                  revision=selection.revision))
    _check_targets(engine, {int(e["id"]): e["kind"] for e in chosen}, decisions)
    return decisions, left


def by_ids(queue: ReviewQueue, engine: Engine, ids: list[int], action: str) -> tuple[list[Decision], list[Doc]]:
    """The admin's selection: ``approve``/``skip`` each, or ``merge-top`` (each into its top
    suggestion; those with none are left). Entries decided meanwhile are passed over when recorded."""
    found = queue.entries_by_id(ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise ReviewError(f"no review entry {missing[0]}; nothing was decided")
    chosen = [found[i] for i in dict.fromkeys(ids)]
    if action != "merge-top":
        return [Decision(int(e["id"]), action) for e in chosen], []
    decisions = [Decision(int(e["id"]), "merge", _top(e, 0.0)) for e in chosen if _top(e, 0.0) is not None]
    _check_targets(engine, {int(e["id"]): e["kind"] for e in chosen}, decisions)
    return decisions, [e for e in chosen if _top(e, 0.0) is None]


def record(queue: ReviewQueue, decisions: list[Decision], batch_size: int, progress: Progress | None = None,
           skip_decided: bool = False) -> tuple[list[Doc], list[int]]:
    """Record the decisions, ``batch_size`` per queue transaction; returns (jobs, entries passed over)."""
    started, jobs, passed = time.monotonic(), [], []
    for start in range(0, len(decisions), batch_size):
        done, over = queue.decide_many(decisions[start:start + batch_size], skip_decided=skip_decided)
        jobs += done
        passed += over
        if progress is not None:
            progress(min(start + batch_size, len(decisions)), len(decisions), time.monotonic() - started)
    return jobs, passed


def _check(engine: Engine, selection: Selection, action: str, into: int | None) -> None:
    if selection.ids and selection.filtered:
        raise ReviewError("name either entry ids or --all / --type / --source / --no-suggestion, not both")
    if not selection.ids and not selection.filtered and selection.suggested_above is None:
        raise ReviewError("name entries (ID...) or pick them with --all, --type, --source or --suggested-above")
    if selection.revision is not None and len(selection.ids) != 1:
        raise ReviewError("--revision is the revision of the one price change you viewed: name its entry id alone")
    score = selection.suggested_above
    if score is not None and not 0 <= score <= 100:
        raise ReviewError(f"--suggested-above must be a score from 0 to 100, got {score:g}")
    if score is not None and action != "merge":
        raise ReviewError("--suggested-above picks the entity to merge into: use it with `review merge`")
    if action == "merge" and (into is None) == (score is None):
        raise ReviewError("merge needs --into ID or --suggested-above SCORE (one of them)")
    if selection.kind is not None and selection.kind not in (*ENTITY_KINDS, "price"):
        raise ReviewError(f"--type must be one of {', '.join((*ENTITY_KINDS, 'price'))}, got {selection.kind!r}")
    if selection.source is not None:
        with engine.connect() as conn:
            known = conn.execute(select(Source.id).where(Source.name == selection.source)).first()
        if known is None:
            raise ReviewError(f"no source named {selection.source!r} (the names are in the admin's Sources tab)")


def _by_ids(queue: ReviewQueue, ids: tuple[int, ...], revision: int | None = None) -> list[Doc]:
    found = queue.entries_by_id(list(ids))
    for entry_id in ids:
        if entry_id not in found:
            raise ReviewError(f"no review entry {entry_id} (see `recordhound review list`); nothing was decided")
        if found[entry_id]["status"] not in ("pending", "failed"):
            raise ReviewError(f"entry {entry_id} is {found[entry_id]['status']}, not pending; nothing was decided")
        if revision is not None and found[entry_id]["kind"] != "price":
            raise ReviewError(f"entry {entry_id} is {found[entry_id]['kind']}: --revision is for price changes")
    return [found[i] for i in dict.fromkeys(ids)]


def _top(entry: Doc, above: float | None) -> int | None:
    suggestions = entry.get("suggestions") or ()
    if above is None or not suggestions or float(suggestions[0]["score"]) <= above:
        return None
    return int(suggestions[0]["id"])


def _check_targets(engine: Engine, kinds: dict[int, str], decisions: list[Decision]) -> None:
    """Every merge names an existing entity of its entry's type (one query per type)."""
    wanted: dict[str, set[int]] = {}
    for d in decisions:
        if d.action == "merge" and d.into is not None and kinds[d.entry_id] in ENTITY_KINDS:
            wanted.setdefault(kinds[d.entry_id], set()).add(d.into)
    with engine.connect() as conn:
        there = {kind: entities.existing(conn, kind, ids) for kind, ids in wanted.items()}
    for d in decisions:
        kind = kinds[d.entry_id]
        if d.action == "merge" and d.into is not None and kind in there and d.into not in there[kind]:
            check_merge(engine, kind, d.entry_id, d.into)  # raises, saying what the id is instead
