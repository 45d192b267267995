"""How the offers of a page are named when the shop gives them no id of their own (``offer_ids``), and
the names used before migration 0007 (``POSITIONAL_ID``). A module of its own: the store's writer
process (the review queue's rejected documents) needs them without the normalizer's imports (the
profile loader, price-parser: ~40 ms of the writer's start)."""

from __future__ import annotations

import re
from collections import Counter

from recordhound.items import Offer

POSITIONAL_ID = re.compile(r"^(?P<page>.*)#[^#/]*/[^#/]*/(?P<n>\d+)$")  # before 0007: PAGE#FORMAT/CONDITION/N


def offer_ids(page_id: str, offers: list[Offer]) -> list[str]:
    """The id of each offer: the shop's own, else ``PAGE#FORMAT/CONDITION`` (``/MEDIA/SLEEVE`` added
    when graded); an id that repeats gets ``~2``, ``~3``... in page order among the equal ones only,
    so reordering the offers or adding one elsewhere on the page renames none of the others."""
    seen: Counter[str] = Counter()
    ids = []
    for offer in offers:
        name = offer.external_id or f"{page_id}#{offer.format or '-'}/{offer.condition or '-'}" + (
            f"/{offer.media_grade or '-'}/{offer.sleeve_grade or '-'}" if offer.media_grade or offer.sleeve_grade
            else "")
        seen[name] += 1
        ids.append(name if seen[name] == 1 else f"{name}~{seen[name]}")
    return ids
