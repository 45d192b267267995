"""Parked items as JSON documents and back (prices as strings: no float rounding)."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal
from typing import Any

from recordhound.items import FieldProblem, Release


def release_doc(item: Release) -> dict[str, Any]:
    doc = asdict(item)
    doc["price"] = None if item.price is None else str(item.price)
    return doc


def release_from_doc(doc: dict[str, Any]) -> Release:
    fields = dict(doc)
    fields["price"] = None if fields.get("price") is None else Decimal(fields["price"])
    fields["problems"] = [FieldProblem(**p) for p in fields.get("problems") or ()]
    return Release(**fields)
