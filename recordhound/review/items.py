"""Parked items as JSON documents and back (prices as strings: no float rounding)."""

from __future__ import annotations

import json
from dataclasses import asdict
from decimal import Decimal
from typing import Any

from recordhound import music
from recordhound.items import FieldProblem, Offer, Release
from recordhound.offer_names import POSITIONAL_ID, offer_ids
from recordhound.text import text_or


def release_doc(item: Release) -> dict[str, Any]:
    doc = asdict(item)
    doc["price"] = None if item.price is None else str(item.price)
    doc["offers"] = [{**asdict(o), "price": None if o.price is None else str(o.price)} for o in item.offers]
    return doc


def rejected_doc(item: Release) -> dict[str, Any]:
    """``release_doc`` of a rejected item; for one whose values no document holds (a dict with tuple
    keys, a cycle, a lock: only a launcher's own pipeline puts such values on an item) its identity
    as text, so that rejecting it cannot fail the rest of its batch."""
    try:
        doc = release_doc(item)
        json.dumps(doc, default=str)  # what the document stores do with it
    except (TypeError, ValueError, RecursionError):
        names = ("source", "url", "external_id", "title")
        return {**{name: text_or(getattr(item, name, None), "?")[:300] for name in names},
                "unreadable": True}
    return doc


def release_from_doc(doc: dict[str, Any]) -> Release:
    fields = dict(doc)
    fields["price"] = None if fields.get("price") is None else Decimal(fields["price"])
    fields["problems"] = [FieldProblem(**p) for p in fields.get("problems") or ()]
    fields["offers"] = [Offer(**{**o, "price": None if o.get("price") is None else Decimal(o["price"])})
                        for o in fields.get("offers") or ()]
    return _as_written_now(Release(**fields))


def _barcode_now(code: str | None) -> str | None:
    """A parked barcode in today's form; a placeholder ("0000000000000", parked before they were refused)
    is none: the writer matches releases by barcode first."""
    if not code or (found := music.barcode(code)) is not None:
        return found if code else code
    digits = "".join(code.split()).replace("-", "")
    return None if digits.isdigit() and music.placeholder(digits) else code


def _as_written_now(item: Release) -> Release:
    """An item parked by an earlier version, in today's form: barcodes as EAN-13 (migration 0006)
    and offers named by page, format and condition rather than their place (migration 0007), so
    releasing it matches what the product DB holds now."""
    item.barcode = _barcode_now(item.barcode)
    for offer in item.offers:
        offer.barcode = _barcode_now(offer.barcode)
    positional = sorted(((int(found["n"]), offer) for offer in item.offers
                         if (found := POSITIONAL_ID.match(offer.external_id)) and found["page"] == item.external_id),
                        key=lambda pair: pair[0])
    names = offer_ids(item.external_id, [Offer("", "", o.format, o.condition, o.media_grade, o.sleeve_grade)
                                         for _, o in positional])
    for (_, offer), name in zip(positional, names):
        offer.external_id = name
    return item
