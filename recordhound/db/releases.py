"""Write releases and their artist/style links: insert new, update changed, leave the rest."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from recordhound.db.ids import insert_with_ids
from recordhound.db.models import Offer, Release, ReleaseArtist, ReleaseStyle
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

    def same_as(self, stored: ReleaseRow) -> bool:
        """Equal, counting "ABC-00012" and "ABC 00012" as one catalogue number (no flip-flops)."""
        if self == stored:
            return True
        same_number = catalog_number_key(self.catalog_number or "") == catalog_number_key(
            stored.catalog_number or "")
        return same_number and replace(self, catalog_number=stored.catalog_number) == stored

    def columns(self) -> dict[str, object]:
        return {"natural_key": self.natural_key, "title": self.title, "label_id": self.label_id,
                "catalog_number": self.catalog_number, "year": self.year, "barcode": self.barcode,
                "country": self.country}

    def keeping(self, stored: ReleaseRow) -> ReleaseRow:
        """Identifiers another shop printed are kept when this one does not print them."""
        return replace(self, barcode=stored.barcode or self.barcode, country=self.country or stored.country,
                       label_id=self.label_id or stored.label_id, year=self.year or stored.year,
                       catalog_number=self.catalog_number or stored.catalog_number)


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
    return {
        r.natural_key: (r.id, ReleaseRow(
            r.natural_key, r.title, r.label_id, r.catalog_number, r.year,
            tuple(aid for _, aid in sorted(artists.get(r.id, []))), frozenset(styles.get(r.id, ())),
            r.barcode, r.country,
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
    _link(conn, changed)


def _link(conn: Connection, releases: list[tuple[int, ReleaseRow]]) -> None:
    """Artist and style link rows (no sequences: rewriting them burns no IDs)."""
    artists = [{"release_id": rid, "artist_id": aid, "position": pos}
               for rid, row in releases for pos, aid in enumerate(row.artist_ids)]
    styles = [{"release_id": rid, "style_id": sid} for rid, row in releases for sid in sorted(row.style_ids)]
    if artists:
        conn.execute(insert(ReleaseArtist), artists)
    if styles:
        conn.execute(insert(ReleaseStyle), styles)
