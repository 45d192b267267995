"""The ``sources`` row of a shop or file, its JSON metadata (status, progress, counts) and the
spellings it used for artists, labels and styles (``source_spellings``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, bindparam, insert, select, update

from recordhound.db.engine import writing
from recordhound.db.ids import insert_with_ids
from recordhound.db.models import Source, SourceSpelling

CALLS_KEY, CALLS_KEPT = "calls", 32  # the ids of a source's last crawl calls recorded (``update_source_meta``)
SPELLINGS_PER_READ = 500  # spellings looked up per statement (within every backend's parameter limit)


def ensure_source(target: Engine | Connection, name: str, kind: str, location: str) -> int:
    """The source's row id, created on first use (never re-inserted); in ``target``'s transaction
    when it is a connection."""
    with writing(target) as conn:
        found = conn.execute(select(Source.id).where(Source.name == name)).scalar()
        if found is not None:
            if conn.execute(select(Source.location).where(Source.id == found)).scalar() != location:
                conn.execute(update(Source).where(Source.id == found).values(location=location))
            return int(found)
        meta: dict[str, Any] = {"status": "new", "parsed_at": None, "error_message": None, "counts": {}}
        return insert_with_ids(conn, Source, [{"name": name, "kind": kind, "location": location, "meta": meta}])[0]


def update_source_meta(target: Engine | Connection, source_id: int, changes: dict[str, Any],
                       call: str = "") -> dict[str, Any] | None:
    """Merge ``changes`` into the source's JSON metadata (in ``target``'s transaction when it is a
    connection); returns the new metadata. With ``call`` (an id its caller gave the call, the same in
    each of its tries): None, and nothing written, when that call was recorded already, tried again
    after its commit (the writer died before its reply). Other nodes may have written meanwhile, so
    the metadata's values cannot tell; the ids of the last ``CALLS_KEPT`` calls are kept there."""
    with writing(target) as conn:
        meta: dict[str, Any] = dict(conn.execute(select(Source.meta).where(Source.id == source_id)).scalar_one() or {})
        calls = list(meta.get(CALLS_KEY) or [])
        if call in calls:
            return None
        meta.update(changes)
        if call:
            meta[CALLS_KEY] = [*calls, call][-CALLS_KEPT:]
        conn.execute(update(Source).where(Source.id == source_id).values(meta=meta))
        return meta


def record_spellings(conn: Connection, source_id: int, ids: dict[str, dict[str, int]]) -> int:
    """Record which entity each spelling (kind → spelling → entity id) stands for at this source:
    new spellings are inserted, a spelling whose entity changed (a merge) is repointed, the rest
    is left alone. Returns the rows written."""
    table = SourceSpelling
    written = 0
    for kind, wanted in ids.items():
        stored: dict[str, int] = {}
        names = sorted(wanted)
        for at in range(0, len(names), SPELLINGS_PER_READ):
            stored.update((spelling, entity_id) for spelling, entity_id in conn.execute(
                select(table.spelling, table.entity_id).where(
                    table.source_id == source_id, table.kind == kind,
                    table.spelling.in_(names[at:at + SPELLINGS_PER_READ]))))
        new = [{"source_id": source_id, "kind": kind, "spelling": spelling, "entity_id": entity_id}
               for spelling, entity_id in wanted.items() if spelling not in stored]
        moved = [{"b_spelling": spelling, "b_entity": entity_id} for spelling, entity_id in wanted.items()
                 if spelling in stored and stored[spelling] != entity_id]
        if new:
            conn.execute(insert(table), new)
        if moved:
            conn.execute(update(table).where(table.source_id == source_id, table.kind == kind,
                                             table.spelling == bindparam("b_spelling"))
                         .values(entity_id=bindparam("b_entity")), moved)
        written += len(new) + len(moved)
    return written


def spellings(conn: Connection, source_id: int, kind: str) -> dict[str, int]:
    """The spellings of one kind the source used, each with its entity id."""
    return {spelling: entity_id for spelling, entity_id in conn.execute(
        select(SourceSpelling.spelling, SourceSpelling.entity_id).where(
            SourceSpelling.source_id == source_id, SourceSpelling.kind == kind))}
