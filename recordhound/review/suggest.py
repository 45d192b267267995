"""Suggested merges for a pending name: the closest existing entities by fuzzy score."""

from __future__ import annotations

from typing import Any

from rapidfuzz import fuzz, process, utils

from recordhound.text import name_key

SUGGESTIONS = 5
MIN_SCORE = 60.0


def matching_keys(names: dict[int, str]) -> dict[int, str]:
    """What ``suggest`` compares; compute once for many spellings."""
    return {entity_id: name_key(name) for entity_id, name in names.items()}


def suggest(names: dict[int, str], spelling: str, limit: int = SUGGESTIONS,
            keys: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """Up to ``limit`` entities (id, name, score 0–100) whose names look like ``spelling``."""
    if not names:
        return []
    keys = keys if keys is not None else matching_keys(names)
    found = process.extract(name_key(spelling), keys, scorer=fuzz.WRatio, processor=utils.default_process,
                            limit=limit, score_cutoff=MIN_SCORE)
    return [{"id": int(entity_id), "name": names[entity_id], "score": round(float(score), 1)}
            for _, score, entity_id in found]
