"""One backoff rule for every retry of an unreachable service (the frontier, the product DB)."""

from __future__ import annotations

BASE_SECONDS = 0.25


def backoff_seconds(attempt: int, cap_seconds: float) -> float:
    """0.5 s, 1 s, 2 s, ... for attempts 1, 2, 3, ..., never above ``cap_seconds``."""
    return min(cap_seconds, BASE_SECONDS * 2 ** min(attempt, 10))
