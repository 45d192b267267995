"""Write offers: insert new, update changed (one offer_history row per price change, one
stock_changes row per availability transition).

An offer is one format in one condition at one shop (``(source, external id)``, the shop's own id
for that variant): a page that sells an LP and a CD has two, each with its own price, stock,
history and review of large price changes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from recordhound.db.ids import insert_with_ids
from recordhound.db.models import Offer, OfferHistory, StockChange


@dataclass(frozen=True)
class OfferRow:
    external_id: str
    url: str
    release_id: int
    price: Decimal | None
    currency: str | None
    in_stock: bool | None
    availability: str | None = None
    format: str | None = None
    condition: str | None = None
    media_grade: str | None = None
    sleeve_grade: str | None = None
    barcode: str | None = None

    def differs(self, stored: OfferRow) -> bool:
        return self != stored

    def price_differs(self, stored: OfferRow) -> bool:
        return (self.price, self.currency) != (stored.price, stored.currency)


@dataclass(frozen=True)
class HeldPrice:
    """A price change too large to write without a review."""

    offer_id: int
    old: OfferRow
    new: OfferRow
    change_pct: float | None  # None: the currency changed


@dataclass
class OfferCounts:
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    price_changes: int = 0
    held: list[HeldPrice] = field(default_factory=list)
    at_stored: list[int] = field(default_factory=list)  # offers shown at the price now stored: none held


def change_pct(old: OfferRow, new: OfferRow) -> float | None:
    """How much the price moved, in percent of the old price (negative: it fell); None when not
    comparable."""
    if old.price is None or new.price is None or old.currency != new.currency or not old.price:
        return None
    return float((new.price - old.price) / old.price * 100)


def needs_review(old: OfferRow, new: OfferRow, threshold_pct: float) -> bool:
    """A change above the threshold, or to another currency, waits for a reviewer."""
    if old.price is None or new.price is None:
        return False
    pct = change_pct(old, new)
    return pct is None or abs(pct) > threshold_pct


def write_offers(
    conn: Connection, source_id: int, wanted: list[OfferRow], now: datetime, resolution: timedelta,
    threshold_pct: float,
) -> OfferCounts:
    """Prices that moved by more than ``threshold_pct`` keep their old value and come back in
    ``OfferCounts.held`` (the offer's other fields are written); offers shown at a price written now
    (the same, or a change under the threshold) come back in ``OfferCounts.at_stored``."""
    stored = _load(conn, source_id, [row.external_id for row in wanted])
    counts = OfferCounts()
    inserts, updates, history, stock = [], [], [], []
    for row in wanted:
        if row.external_id not in stored:
            inserts.append({**row.__dict__, "source_id": source_id, "first_seen": now, "last_seen": now})
            counts.new += 1
            continue
        offer_id, old, last_seen = stored[row.external_id]
        shown = row.price is not None
        if row.price is None and old.price is not None:  # not shown or did not parse: the known price stands
            row = replace(row, price=old.price, currency=old.currency)
        if row.availability is None and old.availability is not None:  # likewise the known stock
            row = replace(row, availability=old.availability, in_stock=old.in_stock)
        if row.price_differs(old) and needs_review(old, row, threshold_pct):
            counts.held.append(HeldPrice(offer_id, old, row, change_pct(old, row)))
            row = replace(row, price=old.price, currency=old.currency)
        elif shown:
            counts.at_stored.append(offer_id)
        changed = row.differs(old)
        if changed or now - last_seen >= resolution:
            updates.append({"oid": offer_id, **row.__dict__, "last_seen": now})
        if row.price_differs(old):
            history.append(_history(offer_id, (old.price, old.currency), (row.price, row.currency), now))
        if row.availability != old.availability:
            stock.append({"offer_id": offer_id, "old_availability": old.availability,
                          "new_availability": row.availability, "changed_at": now})
        counts.changed += changed
        counts.unchanged += not changed
    counts.price_changes = len(history)
    _execute(conn, inserts, updates, history)
    if stock:
        insert_with_ids(conn, StockChange, stock)
    return counts


def set_price(conn: Connection, offer_id: int, price: Decimal | None, currency: str | None,
              now: datetime, expected: tuple[Decimal | None, str | None] | None = None) -> str:
    """Give one offer a reviewed price, with its history row, compare-and-set: only while it
    still has the ``expected`` (old) price. Returns "written", "already" (it has that price:
    applying the same decision twice writes one row) or "superseded" (it has another price now)."""
    row = conn.execute(select(Offer.price, Offer.currency).where(Offer.id == offer_id)).one_or_none()
    if row is None:
        raise LookupError(f"offer {offer_id} no longer exists")
    if (row.price, row.currency) == (price, currency):
        return "already"
    if expected is not None and (row.price, row.currency) != expected:
        return "superseded"
    conn.execute(update(Offer).where(Offer.id == offer_id).values(price=price, currency=currency))
    insert_with_ids(conn, OfferHistory, [_history(offer_id, (row.price, row.currency), (price, currency), now)])
    return "written"


def _history(offer_id: int, old: tuple[Decimal | None, str | None], new: tuple[Decimal | None, str | None],
             now: datetime) -> dict[str, object]:
    return {"offer_id": offer_id, "old_price": old[0], "old_currency": old[1],
            "new_price": new[0], "new_currency": new[1], "changed_at": now}


def _load(conn: Connection, source_id: int, external_ids: list[str]) -> dict[str, tuple[int, OfferRow, datetime]]:
    rows = conn.execute(
        select(Offer.id, Offer.last_seen, *(getattr(Offer, name) for name in ROW_FIELDS))
        .where(Offer.source_id == source_id, Offer.external_id.in_(external_ids))
    ).all()
    return {
        r.external_id: (r.id, OfferRow(**{name: getattr(r, name) for name in ROW_FIELDS}), _aware(r.last_seen))
        for r in rows
    }


ROW_FIELDS = tuple(OfferRow.__dataclass_fields__)


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; recordhound writes UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _execute(conn: Connection, inserts: list[dict[str, Any]], updates: list[dict[str, Any]],
             history: list[dict[str, Any]]) -> None:
    if inserts:
        insert_with_ids(conn, Offer, inserts)
    if updates:
        conn.execute(
            update(Offer).where(Offer.id == bindparam("oid")).values(
                last_seen=bindparam("last_seen"),
                **{name: bindparam(name) for name in ROW_FIELDS if name != "external_id"}),
            [{k: v for k, v in u.items() if k != "external_id"} for u in updates]
        )
    if history:
        insert_with_ids(conn, OfferHistory, history)


def touch_offers(conn: Connection, source_id: int, urls: list[str], now: datetime, resolution: timedelta) -> None:
    """Pages that answered 304: their offers were seen again. ``last_seen`` moves only when it is
    older than ``resolution`` (as for a page fetched whole); nothing else is written."""
    if urls:
        conn.execute(update(Offer).where(Offer.source_id == source_id, Offer.url.in_(urls),
                                         Offer.last_seen < now - resolution).values(last_seen=now))
