"""The product-database writer: one transaction per batch of items, idempotent by natural key."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, insert, select, update

from recordhound.db import entities
from recordhound.db.engine import lock_for_writing
from recordhound.db.keys import release_key
from recordhound.db.models import Source
from recordhound.db.offers import OfferRow, write_offers
from recordhound.db.releases import ReleaseRow, write_releases
from recordhound.items import Release


@dataclass
class BatchResult:
    """What one batch did; added up into the crawl's stats and summary."""

    items: int = 0
    counts: Counter[str] = field(default_factory=Counter)


class CatalogWriter:
    def __init__(self, engine: Engine, last_seen_resolution: timedelta) -> None:
        self.engine = engine
        self.last_seen_resolution = last_seen_resolution

    def write(self, source_id: int, items: list[Release]) -> BatchResult:
        """Store a batch in one transaction; the same batch written twice changes nothing more."""
        latest = list({item.external_id: item for item in items}.values())
        with self.engine.begin() as conn:
            lock_for_writing(conn)
            return _write(conn, source_id, latest, self.last_seen_resolution)


def _write(conn: Connection, source_id: int, items: list[Release], resolution: timedelta) -> BatchResult:
    result = BatchResult(items=len(items))
    artists, new_artists = entities.resolve(conn, "artist", (a for i in items for a in i.artists))
    labels, new_labels = entities.resolve(conn, "label", (i.label for i in items if i.label))
    styles, new_styles = entities.resolve(conn, "style", (s for i in items for s in i.styles))
    keys = [release_key(item) for item in items]
    wanted = {
        key: ReleaseRow(
            key, item.title, labels[item.label] if item.label else None, item.catalog_number,
            item.year, tuple(dict.fromkeys(artists[a] for a in item.artists)),
            frozenset(styles[s] for s in item.styles),
        )
        for key, item in zip(keys, items)
    }
    release_ids, new_releases, changed_releases = write_releases(conn, wanted)
    offers = [
        OfferRow(i.external_id, i.url, release_ids[key], i.price, i.currency, i.in_stock)
        for key, i in zip(keys, items)
    ]
    counts = write_offers(conn, source_id, offers, datetime.now(UTC), resolution)
    result.counts.update({
        "artists_new": new_artists, "labels_new": new_labels, "styles_new": new_styles,
        "releases_new": new_releases, "releases_changed": changed_releases,
        "offers_new": counts.new, "offers_changed": counts.changed,
        "offers_unchanged": counts.unchanged, "price_changes": counts.price_changes,
    })
    return result


def ensure_source(engine: Engine, name: str, kind: str, location: str) -> int:
    """The source's row id, created on first use (never re-inserted)."""
    with engine.begin() as conn:
        lock_for_writing(conn)
        found = conn.execute(select(Source.id).where(Source.name == name)).scalar()
        if found is not None:
            if conn.execute(select(Source.location).where(Source.id == found)).scalar() != location:
                conn.execute(update(Source).where(Source.id == found).values(location=location))
            return int(found)
        meta = {"status": "new", "parsed_at": None, "error_message": None, "counts": {}}
        inserted = conn.execute(
            insert(Source).values(name=name, kind=kind, location=location, meta=meta).returning(Source.id)
        )
        return int(inserted.scalar_one())


def update_source_meta(engine: Engine, source_id: int, changes: dict[str, Any]) -> dict[str, Any]:
    """Merge ``changes`` into the source's JSON metadata; returns the new metadata."""
    with engine.begin() as conn:
        lock_for_writing(conn)
        meta = dict(conn.execute(select(Source.meta).where(Source.id == source_id)).scalar_one() or {})
        meta.update(changes)
        conn.execute(update(Source).where(Source.id == source_id).values(meta=meta))
        return meta
