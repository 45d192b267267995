"""Artists, labels and styles: find by synonym or matching key; what to do with unknown ones.

``create_unknown`` is the one place that decides what happens to a name the catalog has
never seen. Today it creates the entity; the review queue will replace that decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, insert, select

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


def resolve(conn: Connection, kind: str, spellings: Iterable[str]) -> tuple[dict[str, int], int]:
    """Map every spelling to its entity id; returns (spelling → id, entities created)."""
    tables = ENTITIES[kind]
    wanted = list(dict.fromkeys(spellings))
    if not wanted:
        return {}, 0
    known = _by_synonym(conn, tables, wanted)
    unmatched = [s for s in wanted if s not in known]
    by_key = _by_key(conn, tables, unmatched)
    missing: dict[str, list[str]] = {}
    for spelling in unmatched:
        missing.setdefault(name_key(spelling), []).append(spelling)
    created = create_unknown(
        conn, kind, {k: preferred_spelling(v) for k, v in missing.items() if k not in by_key}
    )
    by_key.update(created)
    resolved = {**known, **{s: by_key[name_key(s)] for s in unmatched}}
    _add_synonyms(conn, tables, {s: resolved[s] for s in unmatched})
    return resolved, len(created)


def create_unknown(conn: Connection, kind: str, names_by_key: dict[str, str]) -> dict[str, int]:
    """The decision for names no entity matches: create them under their preferred spelling."""
    if not names_by_key:
        return {}
    entity = ENTITIES[kind].entity
    rows = [{"name": name, "name_key": key} for key, name in sorted(names_by_key.items())]
    result = conn.execute(
        insert(entity).returning(entity.name_key, entity.id, sort_by_parameter_order=True), rows
    )
    return {key: entity_id for key, entity_id in result.all()}


def _by_synonym(conn: Connection, tables: EntityTables, spellings: list[str]) -> dict[str, int]:
    synonym = tables.synonym
    fk = getattr(synonym, tables.fk)
    rows = conn.execute(select(synonym.spelling, fk).where(synonym.spelling.in_(spellings)))
    return {spelling: entity_id for spelling, entity_id in rows.all()}


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
        conn.execute(insert(tables.synonym), rows)
