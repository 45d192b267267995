"""Write releases and their artist/style links: insert new, update changed, leave the rest."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import Connection, bindparam, delete, insert, select, update

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
                "country": self.country}

    def keeping(self, stored: ReleaseRow) -> ReleaseRow:
        """Identifiers another shop printed are kept when this one does not print them. Catalogue
        numbers keep their stored order (the first stays first), in this shop's spelling, with the
        ones this shop adds after them."""
        spelled = {catalog_number_key(n): n for n in self.catalog_numbers}
        known = _keys(stored.catalog_numbers)
        numbers = tuple(spelled.get(k, n) for k, n in zip(known, stored.catalog_numbers)) + tuple(
            n for k, n in spelled.items() if k not in known)
        return replace(self, barcode=stored.barcode or self.barcode, country=self.country or stored.country,
                       label_id=self.label_id or stored.label_id, year=self.year or stored.year,
                       catalog_number=numbers[0] if numbers else self.catalog_number or stored.catalog_number,
                       catalog_numbers=numbers)


def _keys(numbers: tuple[str, ...]) -> list[str]:
    return [catalog_number_key(n) for n in numbers]


def write_releases(conn: Connection, wanted: dict[str, ReleaseRow]) -> tuple[dict[str, int], int, int]:
    """Returns (natural key → release id, releases created, releases updated)."""
    stored = _load(conn, list(wanted))
    wanted = {key: row.keeping(stored[key][1]) if key in stored else row for key, row in wanted.items()}
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


def by_catalog_numbers(conn: Connection, wanted: list[tuple[str, list[str]]]) -> dict[int, str]:
    """For each (label, catalogue numbers) at its index, the natural key of a stored release of that
    label that carries any of the numbers ("CAT-2" finds the release stored as "FLD001 / CAT-2")."""
    keys = {catalog_number_key(n) for _, numbers in wanted for n in numbers} - {""}
    if not keys:
        return {}
    rows = conn.execute(select(ReleaseCatno.catno_key, Label.name_key, Release.natural_key)
                        .join(Release, Release.id == ReleaseCatno.release_id).join(Label, Label.id == Release.label_id)
                        .where(ReleaseCatno.catno_key.in_(sorted(keys))).order_by(Release.id)).all()
    stored: dict[tuple[str, str], str] = {}
    for catno_key, label_key, natural_key in rows:
        stored.setdefault((label_key, catno_key), natural_key)
    found = {}
    for index, (label, numbers) in enumerate(wanted):
        key = next((stored[k] for n in numbers if (k := (name_key(label), catalog_number_key(n))) in stored), None)
        if key is not None:
            found[index] = key
    return found


def by_names(conn: Connection, wanted: list[tuple[str, int | None, tuple[int, ...]]]) -> dict[int, str]:
    """For each (title, year, artist ids) at its index, the natural key of a stored release with
    the same title (by its matching key), year and artists: the last step of matching."""
    titles = {title for title, _, _ in wanted}
    rows = conn.execute(select(Release.id, Release.natural_key, Release.title, Release.year)
                        .where(Release.title.in_(titles)).order_by(Release.id)).all()
    if not rows:
        return {}
    artists: dict[int, list[tuple[int, int]]] = {}
    for rid, aid, pos in conn.execute(select(ReleaseArtist.release_id, ReleaseArtist.artist_id, ReleaseArtist.position)
                                      .where(ReleaseArtist.release_id.in_([r.id for r in rows]))):
        artists.setdefault(rid, []).append((pos, aid))
    stored = {(name_key(r.title), r.year, tuple(a for _, a in sorted(artists.get(r.id, [])))): r.natural_key
              for r in reversed(rows)}
    return {index: stored[(name_key(title), year, ids)] for index, (title, year, ids) in enumerate(wanted)
            if (name_key(title), year, ids) in stored}


def _load(conn: Connection, keys: list[str]) -> dict[str, tuple[int, ReleaseRow]]:
    rows = conn.execute(
        select(Release.id, Release.natural_key, Release.title, Release.label_id,
               Release.catalog_number, Release.year, Release.barcode, Release.country)
        .where(Release.natural_key.in_(keys))
    ).all()
    ids = [r.id for r in rows]
    artists: dict[int, list[tuple[int, int]]] = {}
    for rid, aid, pos in conn.execute(
        select(ReleaseArtist.release_id, ReleaseArtist.artist_id, ReleaseArtist.position)
        .where(ReleaseArtist.release_id.in_(ids))
    ):
        artists.setdefault(rid, []).append((pos, aid))
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
            tuple(aid for _, aid in sorted(artists.get(r.id, []))), frozenset(styles.get(r.id, ())),
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
            barcode=bindparam("barcode"), country=bindparam("country")),
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
