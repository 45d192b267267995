"""Write releases and their artist/style links: insert new, update changed, leave the rest."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from recordhound.db.ids import insert_with_ids
from recordhound.db.models import Label, Offer, Release, ReleaseArtist, ReleaseCatno, ReleaseStyle
from recordhound.text import catalog_number_key, name_key


@dataclass(frozen=True)
class ReleaseRow:
    """What a release should look like in the database, with entity ids resolved."""

    natural_key: str
    title: str
    label_id: int | None
    catalog_number: str | None
    year: int | None
    artist_ids: tuple[int, ...]
    style_ids: frozenset[int]
    barcode: str | None = None
    country: str | None = None
    catalog_numbers: tuple[str, ...] = ()  # all of them, ``catalog_number`` first

    def same_as(self, stored: ReleaseRow) -> bool:
        """Equal, counting "ABC-00012" and "ABC 00012" as one catalogue number (no flip-flops)."""
        if self == stored:
            return True
        same_number = catalog_number_key(self.catalog_number or "") == catalog_number_key(
            stored.catalog_number or "") and _keys(self.catalog_numbers) == _keys(stored.catalog_numbers)
        return same_number and replace(self, catalog_number=stored.catalog_number,
                                       catalog_numbers=stored.catalog_numbers) == stored

    def columns(self) -> dict[str, object]:
        return {"natural_key": self.natural_key, "title": self.title, "label_id": self.label_id,
                "catalog_number": self.catalog_number, "year": self.year, "barcode": self.barcode,
                "country": self.country, "names_key": names_key(self.title, self.year, self.artist_ids)}

    def keeping(self, stored: ReleaseRow, owner: bool) -> ReleaseRow:
        """What to write over ``stored``. The shop that first stored an offer of the release
        (``owner``) owns its record: title, artists, styles and year follow that shop. Another shop
        adds only identifiers the record lacks (barcode, label, country, year, catalogue numbers
        after the known ones), so two shops that spell a release differently do not rewrite it on
        every crawl. Known catalogue numbers keep their stored order, in the owner's spelling."""
        spelled = {catalog_number_key(n): n for n in self.catalog_numbers}
        known = _keys(stored.catalog_numbers)
        numbers = tuple(spelled.get(k, n) if owner else n for k, n in zip(known, stored.catalog_numbers)) + tuple(
            n for k, n in spelled.items() if k not in known)
        base = self if owner else replace(stored, natural_key=self.natural_key)
        other = stored if owner else self
        return replace(base, barcode=stored.barcode or self.barcode, country=base.country or other.country,
                       label_id=base.label_id or other.label_id, year=base.year or other.year,
                       catalog_number=numbers[0] if numbers else self.catalog_number or stored.catalog_number,
                       catalog_numbers=numbers)


def names_key(title: str, year: int | None, artist_ids: tuple[int, ...]) -> str:
    """``releases.names_key`` (migration 0012): a digest of the title's matching key, the year and
    the ordered artist ids, so the last step of matching finds exactly the releases it looks for
    through one index ("Greatest Hits" and "GREATEST HITS!" by the same artists are one record)."""
    named = f"{name_key(title)}\x1f{'' if year is None else year}\x1f{','.join(map(str, artist_ids))}"
    return hashlib.blake2b(named.encode(), digest_size=16).hexdigest()


def _keys(numbers: tuple[str, ...]) -> list[str]:
    return [catalog_number_key(n) for n in numbers]


def write_releases(conn: Connection, source_id: int,
                   wanted: dict[str, ReleaseRow]) -> tuple[dict[str, int], int, int]:
    """Returns (natural key → release id, releases created, releases updated)."""
    stored = _load(conn, list(wanted))
    owners = _owners(conn, [release_id for release_id, _ in stored.values()])
    wanted = {key: row.keeping(stored[key][1], owners.get(stored[key][0], source_id) == source_id)
              if key in stored else row for key, row in wanted.items()}
    new = [row for key, row in wanted.items() if key not in stored]
    changed = [(stored[key][0], row) for key, row in wanted.items()
               if key in stored and not row.same_as(stored[key][1])]
    ids = {key: release_id for key, (release_id, _) in stored.items()}
    ids.update(_insert(conn, new))
    _update(conn, changed)
    return ids, len(new), len(changed)


def by_barcode(conn: Connection, barcodes: list[str]) -> dict[str, str]:
    """barcode → the natural key of the release stored with it (on the release or on an offer):
    a barcode names one release in every shop, so it is matched before any other key."""
    if not barcodes:
        return {}
    found: dict[str, str] = {}
    for code, key in conn.execute(select(Release.barcode, Release.natural_key)
                                  .where(Release.barcode.in_(barcodes)).order_by(Release.id)):
        found.setdefault(str(code), key)
    rows = conn.execute(select(Offer.barcode, Release.natural_key).join(Release, Release.id == Offer.release_id)
                        .where(Offer.barcode.in_(barcodes)).order_by(Offer.id))
    for code, key in rows:
        found.setdefault(str(code), key)
    return found


@dataclass(frozen=True)
class Wanted:
    """What a new item says about its release, to find the stored one."""

    label: str | None
    numbers: tuple[str, ...]
    title: str
    year: int | None
    artist_ids: tuple[int, ...]

    def same_record(self, title_key: str, artist_ids: tuple[int, ...]) -> bool:
        """A catalogue number names a record only together with its title or one of its artists:
        a shop that prints the label's number on another record does not merge the two."""
        return title_key == name_key(self.title) or bool(set(artist_ids) & set(self.artist_ids))


def by_catalog_numbers(conn: Connection, wanted: list[Wanted]) -> dict[int, str]:
    """For each item at its index, the natural key of the first stored release of its label that
    carries any of its numbers ("CAT-2" finds the release stored as "FLD001 / CAT-2") and is the
    same record (:meth:`Wanted.same_record`)."""
    keys = {catalog_number_key(n) for item in wanted if item.label for n in item.numbers} - {""}
    if not keys:
        return {}
    rows = conn.execute(select(ReleaseCatno.catno_key, Label.name_key, Release.id, Release.natural_key, Release.title)
                        .join(Release, Release.id == ReleaseCatno.release_id).join(Label, Label.id == Release.label_id)
                        .where(ReleaseCatno.catno_key.in_(sorted(keys))).order_by(Release.id)).all()
    artists = _artists(conn, [r.id for r in rows])
    stored: dict[tuple[str, str], list[tuple[str, str, tuple[int, ...]]]] = {}
    for row in rows:
        stored.setdefault((row.name_key, row.catno_key), []).append(
            (row.natural_key, name_key(row.title), artists.get(row.id, ())))
    found = {}
    for index, item in enumerate(wanted):
        candidates = [c for n in item.numbers for c in stored.get((name_key(item.label or ""), catalog_number_key(n)), [])]
        key = next((key for key, title_key, ids in candidates if item.same_record(title_key, ids)), None)
        if key is not None:
            found[index] = key
    return found


def by_names(conn: Connection, wanted: list[Wanted]) -> dict[int, str]:
    """For each item at its index, the natural key of a stored release with the same title (by
    its matching key), year and artists: the last step of matching."""
    if not wanted:
        return {}
    # exactly the releases with an item's title, year and artists, through ix_releases_names_key
    # (migration 0012): by title and year, a common title ("Greatest Hits") named more stored
    # releases the bigger the catalog grew, each read with its artists batch after batch
    keys = {names_key(item.title, item.year, item.artist_ids) for item in wanted}
    rows = sorted(conn.execute(select(Release.id, Release.natural_key, Release.title, Release.year)
                               .where(Release.names_key.in_(keys))), key=lambda row: row.id)
    if not rows:
        return {}
    artists = _artists(conn, [r.id for r in rows])
    stored = {(name_key(r.title), r.year, artists.get(r.id, ())): r.natural_key for r in reversed(rows)}
    return {index: stored[names] for index, item in enumerate(wanted)
            if (names := (name_key(item.title), item.year, item.artist_ids)) in stored}


def stored_keys(conn: Connection, keys: list[str]) -> set[str]:
    """Which of these natural keys a stored release has."""
    if not keys:
        return set()
    return set(conn.execute(select(Release.natural_key).where(Release.natural_key.in_(set(keys)))).scalars())


def _artists(conn: Connection, release_ids: list[int]) -> dict[int, tuple[int, ...]]:
    """release id → its artist ids in order."""
    found: dict[int, list[tuple[int, int]]] = {}
    for rid, aid, pos in conn.execute(select(ReleaseArtist.release_id, ReleaseArtist.artist_id, ReleaseArtist.position)
                                      .where(ReleaseArtist.release_id.in_(release_ids))):
        found.setdefault(rid, []).append((pos, aid))
    return {rid: tuple(aid for _, aid in sorted(pairs)) for rid, pairs in found.items()}


def _owners(conn: Connection, release_ids: list[int]) -> dict[int, int]:
    """release id → the source of its first stored offer (the shop whose record it is)."""
    if not release_ids:
        return {}
    first = select(func.min(Offer.id)).where(Offer.release_id.in_(release_ids)).group_by(Offer.release_id)
    return {rid: sid for rid, sid in conn.execute(select(Offer.release_id, Offer.source_id).where(Offer.id.in_(first)))}


def _load(conn: Connection, keys: list[str]) -> dict[str, tuple[int, ReleaseRow]]:
    rows = conn.execute(
        select(Release.id, Release.natural_key, Release.title, Release.label_id,
               Release.catalog_number, Release.year, Release.barcode, Release.country)
        .where(Release.natural_key.in_(keys))
    ).all()
    ids = [r.id for r in rows]
    artists = _artists(conn, ids)
    styles: dict[int, set[int]] = {}
    for rid, sid in conn.execute(
        select(ReleaseStyle.release_id, ReleaseStyle.style_id).where(ReleaseStyle.release_id.in_(ids))
    ):
        styles.setdefault(rid, set()).add(sid)
    numbers: dict[int, list[tuple[int, str]]] = {}
    for rid, pos, number in conn.execute(select(ReleaseCatno.release_id, ReleaseCatno.position,
                                                ReleaseCatno.catalog_number).where(ReleaseCatno.release_id.in_(ids))):
        numbers.setdefault(rid, []).append((pos, number))
    return {
        r.natural_key: (r.id, ReleaseRow(
            r.natural_key, r.title, r.label_id, r.catalog_number, r.year,
            artists.get(r.id, ()), frozenset(styles.get(r.id, ())),
            r.barcode, r.country, tuple(n for _, n in sorted(numbers.get(r.id, []))),
        ))
        for r in rows
    }


def _insert(conn: Connection, rows: list[ReleaseRow]) -> dict[str, int]:
    if not rows:
        return {}
    new_ids = insert_with_ids(conn, Release, [row.columns() for row in rows])
    ids = {row.natural_key: release_id for row, release_id in zip(rows, new_ids)}
    _link(conn, [(ids[row.natural_key], row) for row in rows])
    return ids


def _update(conn: Connection, changed: list[tuple[int, ReleaseRow]]) -> None:
    if not changed:
        return
    conn.execute(
        update(Release).where(Release.id == bindparam("rid")).values(
            title=bindparam("title"), label_id=bindparam("label_id"),
            catalog_number=bindparam("catalog_number"), year=bindparam("year"),
            barcode=bindparam("barcode"), country=bindparam("country"), names_key=bindparam("names_key")),
        [{"rid": rid, **{k: v for k, v in row.columns().items() if k != "natural_key"}}
         for rid, row in changed]
    )
    ids = [rid for rid, _ in changed]
    conn.execute(delete(ReleaseArtist).where(ReleaseArtist.release_id.in_(ids)))
    conn.execute(delete(ReleaseStyle).where(ReleaseStyle.release_id.in_(ids)))
    conn.execute(delete(ReleaseCatno).where(ReleaseCatno.release_id.in_(ids)))
    _link(conn, changed)


def _link(conn: Connection, releases: list[tuple[int, ReleaseRow]]) -> None:
    """Artist, style and catalogue number rows (no sequences: rewriting them burns no IDs)."""
    artists = [{"release_id": rid, "artist_id": aid, "position": pos}
               for rid, row in releases for pos, aid in enumerate(row.artist_ids)]
    styles = [{"release_id": rid, "style_id": sid} for rid, row in releases for sid in sorted(row.style_ids)]
    numbers = [{"release_id": rid, "position": pos, "catalog_number": number, "catno_key": catalog_number_key(number)}
               for rid, row in releases for pos, number in enumerate(row.catalog_numbers)]
    if numbers:
        conn.execute(insert(ReleaseCatno), numbers)
    if artists:
        conn.execute(insert(ReleaseArtist), artists)
    if styles:
        conn.execute(insert(ReleaseStyle), styles)
