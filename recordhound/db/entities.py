"""Artists, labels and styles: find by synonym or matching key; what to do with unknown ones.

``match`` finds what the catalog knows; what happens to the rest is decided by the review
gate (``review/gate.py``): parked for review, or created straight away for a trusted source.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from sqlalchemy import Connection, select

from recordhound.db.ids import insert_with_ids

from recordhound.db.models import Artist, ArtistSynonym, Label, LabelSynonym, Style, StyleSynonym
from recordhound.text import name_key, preferred_spelling


@dataclass(frozen=True)
class EntityTables:
    entity: type[Artist] | type[Label] | type[Style]
    synonym: type[ArtistSynonym] | type[LabelSynonym] | type[StyleSynonym]
    fk: str


ENTITIES = {
    "artist": EntityTables(Artist, ArtistSynonym, "artist_id"),
    "label": EntityTables(Label, LabelSynonym, "label_id"),
    "style": EntityTables(Style, StyleSynonym, "style_id"),
}


def match(conn: Connection, kind: str, spellings: Iterable[str]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Match spellings to entities by synonym, then by matching key.

    Returns (spelling → entity id, name key → spellings no entity matches). A spelling matched
    by key is recorded as a synonym of its entity, once."""
    tables = ENTITIES[kind]
    wanted = list(dict.fromkeys(spellings))
    if not wanted:
        return {}, {}
    known = _by_synonym(conn, tables, wanted)
    unmatched = [s for s in wanted if s not in known]
    by_key = _by_key(conn, tables, unmatched)
    matched = {s: by_key[name_key(s)] for s in unmatched if name_key(s) in by_key}
    _add_synonyms(conn, tables, matched)
    unknown: dict[str, list[str]] = {}
    for spelling in unmatched:
        if spelling not in matched:
            unknown.setdefault(name_key(spelling), []).append(spelling)
    return {**known, **matched}, unknown


def attach(conn: Connection, kind: str, spellings: dict[str, int]) -> None:
    """Record spellings (no entity has them yet) as synonyms of the given entities."""
    _add_synonyms(conn, ENTITIES[kind], spellings)


def create_unknown(conn: Connection, kind: str, unknown: dict[str, list[str]]) -> dict[str, int]:
    """Create entities for unmatched names (a trusted source, or an approved review entry).

    ``unknown``: name key → spellings; the entity takes the preferred spelling, the others
    become its synonyms. Returns spelling → new entity id."""
    if not unknown:
        return {}
    entity = ENTITIES[kind].entity
    rows = [{"name": preferred_spelling(spellings), "name_key": key} for key, spellings in sorted(unknown.items())]
    ids = dict(zip((row["name_key"] for row in rows), insert_with_ids(conn, entity, rows)))
    created = {s: ids[key] for key, spellings in unknown.items() for s in spellings}
    attach(conn, kind, created)
    return created


def name_limits(kind: str) -> tuple[int, int]:
    """The longest name and matching key an entity of ``kind`` holds (its columns' lengths; a name is
    also a synonym's spelling)."""
    entity, synonym = ENTITIES[kind].entity.__table__.c, ENTITIES[kind].synonym.__table__.c
    return min(_length(entity.name), _length(synonym.spelling)), _length(entity.name_key)


def exists(conn: Connection, kind: str, entity_id: int) -> bool:
    entity = ENTITIES[kind].entity
    return conn.execute(select(entity.id).where(entity.id == entity_id)).scalar() is not None


def find(conn: Connection, kind: str, name: str) -> int | None:
    """The entity a name stands for, as :func:`match` finds it (by synonym, then by matching key),
    without recording anything."""
    tables = ENTITIES[kind]
    found = _by_synonym(conn, tables, [name]).get(name)
    return found if found is not None else _by_key(conn, tables, [name]).get(name_key(name))


def by_spellings(conn: Connection, kind: str, spellings: Iterable[str]) -> dict[str, int]:
    """Entities by synonym: spelling → id, for the spellings some entity has."""
    wanted = sorted(set(spellings))
    return _by_synonym(conn, ENTITIES[kind], wanted) if wanted else {}


def by_key(conn: Connection, kind: str, key: str) -> int | None:
    return _by_key(conn, ENTITIES[kind], [key]).get(key)


def by_keys(conn: Connection, kind: str, keys: Iterable[str]) -> dict[str, int]:
    """Entities by their matching key (keys as :func:`name_key` gives them): key → id."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    entity = ENTITIES[kind].entity
    return {key: entity_id for key, entity_id in
            conn.execute(select(entity.name_key, entity.id).where(entity.name_key.in_(wanted))).all()}


def existing(conn: Connection, kind: str, entity_ids: Iterable[int]) -> set[int]:
    wanted = sorted(set(entity_ids))
    if not wanted:
        return set()
    entity = ENTITIES[kind].entity
    return {int(i) for i in conn.execute(select(entity.id).where(entity.id.in_(wanted))).scalars()}


def create_in_order(conn: Connection, kind: str, names: list[tuple[str, str]]) -> dict[str, int]:
    """Create entities from (name key, name) pairs, ids in the order given; returns key → id."""
    rows = [{"name": name, "name_key": key} for key, name in names]
    return dict(zip((key for key, _ in names), insert_with_ids(conn, ENTITIES[kind].entity, rows)))


def attach_in_order(conn: Connection, kind: str, spellings: list[tuple[str, int]]) -> None:
    """Like :func:`attach`, with synonym ids in the order given (a batch writes as one by one would)."""
    tables = ENTITIES[kind]
    insert_with_ids(conn, tables.synonym, [{"spelling": s, tables.fk: entity_id} for s, entity_id in spellings])


def known_spellings(conn: Connection, kind: str, spellings: list[str]) -> set[str]:
    return set(_by_synonym(conn, ENTITIES[kind], spellings))


def names(conn: Connection, kind: str) -> dict[int, str]:
    entity = ENTITIES[kind].entity
    return dict(conn.execute(select(entity.id, entity.name)).all())


def _length(column: object) -> int:
    return int(column.type.length)  # type: ignore[attr-defined]  # String columns carry it


def _by_synonym(conn: Connection, tables: EntityTables, spellings: list[str]) -> dict[str, int]:
    synonym = tables.synonym
    fk = getattr(synonym, tables.fk)
    rows = conn.execute(select(synonym.spelling, fk).where(synonym.spelling.in_(spellings)))
    return {str(spelling): cast(int, entity_id) for spelling, entity_id in rows.all()}


def _by_key(conn: Connection, tables: EntityTables, spellings: list[str]) -> dict[str, int]:
    keys = sorted({name_key(s) for s in spellings})
    if not keys:
        return {}
    entity = tables.entity
    rows = conn.execute(select(entity.name_key, entity.id).where(entity.name_key.in_(keys)))
    return {key: entity_id for key, entity_id in rows.all()}


def _add_synonyms(conn: Connection, tables: EntityTables, new: dict[str, int]) -> None:
    """Record each spelling once; spellings already known were found by ``_by_synonym``."""
    if new:
        rows = [{"spelling": s, tables.fk: entity_id} for s, entity_id in sorted(new.items())]
        insert_with_ids(conn, tables.synonym, rows)
