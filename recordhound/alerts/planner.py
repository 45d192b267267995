"""Which changes match which rule: one ``alert_deliveries`` row per (rule, change), planned once.

A rule keeps ``after_id``, the last id of its kind's event table it has looked at. Planning reads
the events after it, inserts a pending delivery for each match and moves ``after_id`` forward in
the same transaction (compare-and-set: two planners at once plan each change once; the unique
(rule, event) key backs that up). A price held for review has no offer_history row until a
reviewer approves it, so it alerts only then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, Engine, func, select, update

from recordhound.alerts.rules import EVENTS
from recordhound.db.engine import lock_for_writing
from recordhound.db.ids import insert_with_ids
from recordhound.db.models import AlertDelivery, AlertRule, CrawlSample, Offer, OfferHistory, Release, Source, StockChange

EVENT_KIND = {"price_below": "price", "price_drop": "price", "back_in_stock": "stock", "crawl_failed": "crawl"}


@dataclass(frozen=True)
class Planned:
    event_id: int
    title: str
    body: str


def plan(engine: Engine, now: datetime) -> int:
    """Plan the deliveries of every active rule; returns how many were planned."""
    with engine.connect() as conn:
        rules = list(conn.execute(select(AlertRule).where(AlertRule.removed_at.is_(None))
                                  .order_by(AlertRule.id)).all())
    return sum(_plan_rule(engine, rule, now) for rule in rules)


def _plan_rule(engine: Engine, rule: Any, now: datetime) -> int:
    event = EVENTS[rule.kind]
    with engine.begin() as conn:
        lock_for_writing(conn)
        top = conn.execute(select(func.max(event.id))).scalar() or 0
        if top <= rule.after_id:
            return 0
        found = [p for row in conn.execute(_events(rule, top)).all() if (p := _match(rule, row)) is not None]
        moved = conn.execute(update(AlertRule).where(AlertRule.id == rule.id, AlertRule.after_id == rule.after_id)
                             .values(after_id=top))
        if not moved.rowcount:  # another planner took this range (nothing was written here)
            return 0
        _insert(conn, rule, found, now)
        return len(found)


def _insert(conn: Connection, rule: Any, found: list[Planned], now: datetime) -> None:
    kind = EVENT_KIND[rule.kind]
    # (the found changes' range, not their list: one planning may find more than PostgreSQL's 65,535 parameters)
    taken = set(conn.execute(select(AlertDelivery.event_id).where(
        AlertDelivery.rule_id == rule.id, AlertDelivery.event_kind == kind,
        AlertDelivery.event_id.between(found[0].event_id, found[-1].event_id))).scalars()) if found else set()
    rows = [{"rule_id": rule.id, "event_kind": kind, "event_id": p.event_id,
             "dedupe_key": dedupe_key(rule.id, kind, p.event_id), "title": p.title,
             "body": f"{p.body}\n\ndedupe key: {dedupe_key(rule.id, kind, p.event_id)}",
             "status": "pending", "attempts": 0, "next_attempt_at": now, "last_error": None,
             "created_at": now, "sent_at": None} for p in found if p.event_id not in taken]
    if rows:
        insert_with_ids(conn, AlertDelivery, rows)


def dedupe_key(rule_id: int, event_kind: str, event_id: int) -> str:
    """The same for every attempt at one alert: a receiver that keeps the keys it has seen drops repeats."""
    return f"recordhound-{rule_id}-{event_kind}-{event_id}"


def _events(rule: Any, top: int) -> Any:
    query: Any
    if rule.kind == "crawl_failed":
        query = (select(CrawlSample.id, CrawlSample.health_error, CrawlSample.at, Source.name.label("shop"))
                 .join(Source, Source.id == CrawlSample.source_id)
                 .where(CrawlSample.health_error.is_not(None), CrawlSample.finished.is_(True)))
        query = query.where(CrawlSample.source_id == rule.source_id) if rule.source_id else query
        return query.where(CrawlSample.id > rule.after_id, CrawlSample.id <= top).order_by(CrawlSample.id)
    event = OfferHistory if rule.kind in ("price_below", "price_drop") else StockChange
    columns = ((OfferHistory.old_price, OfferHistory.new_price, OfferHistory.old_currency, OfferHistory.new_currency)
               if event is OfferHistory else (StockChange.old_availability, StockChange.new_availability))
    query = (select(event.id, *columns, Offer.url, Offer.format, Offer.condition, Offer.id.label("offer_id"),
                    Release.title, Source.name.label("shop"))
             .join(Offer, Offer.id == event.offer_id).join(Release, Release.id == Offer.release_id)
             .join(Source, Source.id == Offer.source_id)
             .where(event.id > rule.after_id, event.id <= top).order_by(event.id))
    if rule.source_id:
        query = query.where(Offer.source_id == rule.source_id)
    if rule.release_id:
        query = query.where(Offer.release_id == rule.release_id)
    if rule.offer_id:
        query = query.where(Offer.id == rule.offer_id)
    return query


def _match(rule: Any, row: Any) -> Planned | None:
    if rule.kind == "crawl_failed":
        return Planned(row.id, f"recordhound: the crawl of {row.shop} failed its health checks",
                       f"{row.health_error}\nat {row.at:%Y-%m-%d %H:%M} UTC")
    what = f"{row.title} ({', '.join(x for x in (row.format, row.condition) if x) or 'offer'}) at {row.shop}"
    if rule.kind == "back_in_stock":
        if row.new_availability != "in_stock" or row.old_availability in (None, "in_stock"):
            return None
        return Planned(row.id, f"recordhound: back in stock · {what}",
                       f"{row.old_availability} → in stock\n{row.url}")
    change = _price_change(rule, row)
    if change is None:
        return None
    return Planned(row.id, f"recordhound: {change} · {what}",
                   f"{row.old_price} {row.old_currency or ''} → {row.new_price} {row.new_currency or ''}\n{row.url}")


def _price_change(rule: Any, row: Any) -> str | None:
    """The headline of a price change that matches the rule, else None."""
    old, new, threshold = row.old_price, row.new_price, Decimal(rule.threshold or 0)
    if new is None:
        return None
    same_currency = old is not None and row.old_currency == row.new_currency
    if rule.kind == "price_drop":
        if not same_currency or not old or new >= old:
            return None
        drop = (old - new) / old * 100
        return f"price drop −{drop:.1f} %" if drop >= threshold else None
    if rule.currency and row.new_currency != rule.currency:
        return None
    was_below = same_currency and old < threshold
    return f"price below {threshold} {row.new_currency or ''}".rstrip() if new < threshold and not was_below else None
