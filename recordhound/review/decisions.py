"""A reviewer's decision, checked against the product DB before it is queued: a merge names an
entity of the entry's own type that exists. Used by the admin and `recordhound review`."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from recordhound.db import entities
from recordhound.review.queue import ENTITY_KINDS, ReviewError, ReviewQueue

Doc = dict[str, Any]


def decide(queue: ReviewQueue, engine: Engine, entry_id: int, action: str, into: int | None = None,
           fields: dict[str, str] | None = None) -> Doc:
    if action == "merge" and into is not None:
        entry = queue.entry(entry_id)
        check_merge(engine, entry["kind"], entry_id, into)
    return queue.decide(entry_id, action, into=into, fields=fields)


def check_merge(engine: Engine, kind: str, entry_id: int, into: int) -> None:
    if kind not in ENTITY_KINDS:
        return  # the queue refuses the action itself
    with engine.connect() as conn:
        if entities.exists(conn, kind, into):
            return
        other = next((k for k in ENTITY_KINDS if k != kind and entities.exists(conn, k, into)), None)
    why = f"{into} is the id of a {other}, not of {_a(kind)}" if other else f"there is no {kind} with id {into}"
    raise ReviewError(f"cannot merge entry {entry_id} into {into}: {why}")


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
