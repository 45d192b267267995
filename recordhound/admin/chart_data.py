"""The data behind the admin's charts, as uPlot wants it: one shared x axis (Unix seconds) and
one list of values per series (None where a series has no value).

Price history is a step function (a price holds until it changes): per offer, and per release
(every shop's offers of it, every format). Crawl rate comes from ``crawl_samples``; the review
backlog from the review queue's entries (created, and decided).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, select

from recordhound.db.models import CrawlSample, Offer, OfferHistory, Source
from recordhound.review.queue import ENTRIES, ReviewQueue

Chart = dict[str, Any]
Points = list[tuple[float, float | None]]


def _ts(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def price_chart(engine: Engine, offer_ids: list[int]) -> Chart:
    """Each offer's price over time, from its first sighting to its last (steps at each change)."""
    with engine.connect() as conn:
        offers = conn.execute(select(Offer.id, Offer.price, Offer.currency, Offer.format, Offer.condition,
                                     Offer.first_seen, Offer.last_seen, Source.name.label("shop"))
                              .join(Source, Source.id == Offer.source_id).where(Offer.id.in_(offer_ids))
                              .order_by(Offer.id)).all()
        changes = conn.execute(select(OfferHistory.offer_id, OfferHistory.old_price, OfferHistory.new_price,
                                      OfferHistory.changed_at).where(OfferHistory.offer_id.in_(offer_ids))
                               .order_by(OfferHistory.id)).all()
    series = []
    for offer in offers:
        own = [c for c in changes if c.offer_id == offer.id]
        first = own[0].old_price if own else offer.price
        points: Points = [(_ts(offer.first_seen), _number(first))]
        points += [(_ts(c.changed_at), _number(c.new_price)) for c in own]
        points.append((max(_ts(offer.last_seen), points[-1][0]), _number(offer.price)))
        label = " · ".join(str(x) for x in (offer.shop, offer.format, offer.condition) if x)
        series.append((f"{label} ({offer.currency or 'no currency'})", points))
    currencies = sorted({o.currency for o in offers if o.currency})
    return _aligned(series, step=True, unit=" / ".join(currencies) or "price")


def release_offer_ids(engine: Engine, release_id: int) -> list[int]:
    with engine.connect() as conn:
        return list(conn.execute(select(Offer.id).where(Offer.release_id == release_id).order_by(Offer.id)).scalars())


def crawl_rate_chart(engine: Engine, source_id: int | None = None) -> Chart:
    """Items stored and pages fetched per minute, between consecutive samples of one crawl."""
    query = (select(CrawlSample.source_id, CrawlSample.at, CrawlSample.pages, CrawlSample.stored,
                    Source.name.label("source")).join(Source, Source.id == CrawlSample.source_id)
             .order_by(CrawlSample.source_id, CrawlSample.id))
    if source_id is not None:
        query = query.where(CrawlSample.source_id == source_id)
    with engine.connect() as conn:
        samples = conn.execute(query).all()
    series = []
    for name in dict.fromkeys(s.source for s in samples):
        own = [s for s in samples if s.source == name]
        stored: Points = []
        pages: Points = []
        for before, after in zip(own, own[1:]):
            minutes = (_ts(after.at) - _ts(before.at)) / 60
            same_crawl = after.stored >= before.stored and after.pages >= before.pages and minutes > 0
            stored.append((_ts(after.at), round((after.stored - before.stored) / minutes, 1) if same_crawl else None))
            pages.append((_ts(after.at), round((after.pages - before.pages) / minutes, 1) if same_crawl else None))
        series += [(f"{name}: items stored / min", stored), (f"{name}: pages / min", pages)]
    return _aligned(series, step=False, unit="per minute")


def backlog_chart(queue: ReviewQueue, now: datetime | None = None) -> Chart:
    """Entries waiting for a decision (names and price changes) over time."""
    entries = queue.store.run(lambda txn: list(txn.all(ENTRIES).values()))
    moves = sorted([(float(e["created_at"]), 1) for e in entries if e.get("created_at")]
                   + [(float(e["decided_at"]), -1) for e in entries if e.get("decided_at")])
    points: Points = []
    waiting = 0
    for at, step in moves:
        waiting += step
        points.append((at, float(waiting)))
    if points:
        points.append(((now or datetime.now(UTC)).timestamp(), float(waiting)))
    return _aligned([("waiting for a decision", points)], step=True, unit="entries")


def _aligned(series: Iterable[tuple[str, Points]], step: bool, unit: str) -> Chart:
    """One x axis for every series; a step series carries its last value forward between its points."""
    named = list(series)
    xs = sorted({x for _, points in named for x, _ in points})
    out = []
    for label, points in named:
        at = dict(points)
        values: list[float | None] = []
        last: float | None = None
        started = False
        for x in xs:
            if x in at:
                last, started = at[x], True
                values.append(last)
            else:
                values.append(last if step and started else None)
        out.append({"label": label, "values": values})
    return {"x": xs, "series": out, "step": step, "unit": unit}
