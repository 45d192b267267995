"""Check an item against the product schema before any write, so one bad value costs one item.

SQLite stores a 600-character title in a ``VARCHAR(300)``; PostgreSQL refuses it and fails the
whole transaction. The limits are read from the models, so they cannot drift from the schema.
"""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import Numeric

from recordhound.db.models import Artist, Label, Offer as OfferRow, Release as ReleaseRow, Style
from recordhound.items import Offer, Release
from recordhound.text import name_key

_PRICE = OfferRow.__table__.c.price.type
assert isinstance(_PRICE, Numeric) and _PRICE.precision is not None and _PRICE.scale is not None
MAX_PRICE = Decimal(10) ** (_PRICE.precision - _PRICE.scale)


def _length(column: object) -> int:
    return int(column.type.length)  # type: ignore[attr-defined]  # String columns carry it


LIMITS = {
    "external_id": _length(OfferRow.__table__.c.external_id),
    "title": _length(ReleaseRow.__table__.c.title),
    "catalog_number": _length(ReleaseRow.__table__.c.catalog_number),
    "currency": _length(OfferRow.__table__.c.currency),
    "format": _length(OfferRow.__table__.c.format),
    "media_grade": _length(OfferRow.__table__.c.media_grade),
    "sleeve_grade": _length(OfferRow.__table__.c.sleeve_grade),
    "barcode": _length(OfferRow.__table__.c.barcode),
    "country": _length(ReleaseRow.__table__.c.country),
    "artist": _length(Artist.__table__.c.name),
    "label": _length(Label.__table__.c.name),
    "style": _length(Style.__table__.c.name),
}


def problem(item: Release) -> str | None:
    """Why ``item`` cannot be written as it is (the first reason found), or None."""
    if not item.external_id:
        return "external_id is empty"
    if not item.title:
        return "title is empty"
    for field in ("external_id", "title", "catalog_number", "currency", "barcode", "country"):
        if (reason := _too_long(field, getattr(item, field))) is not None:
            return reason
    for number in item.numbers():
        if (reason := _too_long("catalog_number", number)) is not None:
            return reason
    for offer in item.offers:
        if (reason := _offer_problem(offer)) is not None:
            return reason
    names = [("artist", n) for n in item.artists] + [("style", n) for n in item.styles]
    names += [("label", item.label)] if item.label else []
    for kind, name in names:
        if (reason := _too_long(kind, name) or _too_long(kind, name_key(name))) is not None:
            return reason
    if item.price is not None and (not item.price.is_finite() or abs(item.price) >= MAX_PRICE):
        return f"price {item.price} is outside what the offers table holds (below {MAX_PRICE})"
    if item.year is not None and not 0 < item.year < 10000:
        return f"year {item.year} is not a year"
    return None


def _offer_problem(offer: Offer) -> str | None:
    if not offer.external_id:
        return "an offer's external_id is empty"
    for field in ("external_id", "format", "media_grade", "sleeve_grade", "barcode", "currency"):
        if (reason := _too_long(field, getattr(offer, field))) is not None:
            return f"offer {offer.external_id[:60]!r}: {reason}"
    if offer.price is not None and (not offer.price.is_finite() or abs(offer.price) >= MAX_PRICE):
        return f"offer {offer.external_id[:60]!r}: price {offer.price} is outside what the offers table holds"
    return None


def _too_long(field: str, value: str | None) -> str | None:
    limit = LIMITS[field]
    if value is None or len(value) <= limit:
        return None
    return f"{field} is {len(value)} characters long, the column holds {limit}: {value[:60]!r}..."
