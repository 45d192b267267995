"""Parked items as JSON documents and back (prices as strings: no float rounding)."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal
from typing import Any

from recordhound.items import FieldProblem, Offer, Release


def release_doc(item: Release) -> dict[str, Any]:
    doc = asdict(item)
    doc["price"] = None if item.price is None else str(item.price)
    doc["offers"] = [{**asdict(o), "price": None if o.price is None else str(o.price)} for o in item.offers]
    return doc


def release_from_doc(doc: dict[str, Any]) -> Release:
    fields = dict(doc)
    fields["price"] = None if fields.get("price") is None else Decimal(fields["price"])
    fields["problems"] = [FieldProblem(**p) for p in fields.get("problems") or ()]
    fields["offers"] = [Offer(**{**o, "price": None if o.get("price") is None else Decimal(o["price"])})
                        for o in fields.get("offers") or ()]
    return Release(**fields)
