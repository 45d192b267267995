"""Recrawl schedules: when a done page is fetched again, and what a conditional request sends.

A profile's ``recrawl: {product: 6h, listing: 1h}`` keeps each done request of those link kinds
in the frontier with a due time (a ``Recheck``). With ``min`` and ``max`` the interval adapts,
like Nutch's adaptive fetch schedule: a page that had not changed (a 304, or the same body
fingerprint) waits ``GROW`` times longer, up to ``max``; one that changed waits ``SHRINK`` times
as long, down to ``min``. The state kept with the request (interval, ETag, Last-Modified, body
fingerprint) makes the next fetch a conditional request. A callback may keep more in it (``Held.keep``):
a sitemap keeps each product's ``lastmod`` (``LASTMODS``), so its next read fetches again only the
products whose ``lastmod`` moved; what it keeps is carried over a 304.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from recordhound.sources.profile import RecrawlSpec

GROW, SHRINK = 1.5, 0.5
LASTMODS = "lastmods"  # a sitemap's state: {product URL: its lastmod when the sitemap was last read}
READS = "reads"  # a sitemap's state: how many of its reads were acked (the pages it sends again are per read)
KEPT = (LASTMODS, READS)  # what a callback keeps in the state, carried over a fetch that did not replace it
_SHORT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_ISO = re.compile(r"^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object) -> float | None:
    """``30m`` / ``6h`` / ``2d`` / ``45s``, an ISO 8601 duration (``PT6H``, ``P1DT12H``) or a
    number of seconds; None when it is none of those (or not above 0)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value > 0 else None
    if not isinstance(value, str):
        return None
    if short := _SHORT.match(value):
        seconds = float(short[1]) * UNIT_SECONDS[short[2]]
    elif (iso := _ISO.match(value.strip().upper())) and any(iso.groups()):
        days, hours, minutes, secs = (float(g or 0) for g in iso.groups())
        seconds = days * 86400 + hours * 3600 + minutes * 60 + secs
    else:
        return None
    return seconds if seconds > 0 else None


@dataclass(frozen=True)
class Seen:
    """What one fetch of a page answered (from the response)."""

    status: int
    etag: str | None
    last_modified: str | None
    fingerprint: str | None  # of the body; None for a 304

    @classmethod
    def of(cls, response: Any) -> Seen:
        headers = response.headers
        etag, modified = headers.get(b"ETag"), headers.get(b"Last-Modified")
        body = b"" if response.status == 304 else response.body
        return cls(response.status, etag.decode("latin-1") if etag else None,
                   modified.decode("latin-1") if modified else None,
                   None if response.status == 304 else hashlib.sha1(body, usedforsecurity=False).hexdigest()[:16])


def load_state(raw: str) -> dict[str, Any]:
    if not raw:
        return {}
    state = json.loads(raw)
    return state if isinstance(state, dict) else {}


CONDITIONAL = ("If-None-Match", "If-Modified-Since")  # the validators a recheck sends, from its own state


def conditional_headers(state: dict[str, Any]) -> dict[str, str]:
    headers = {}
    if state.get("etag"):
        headers["If-None-Match"] = state["etag"]
    if state.get("last_modified"):
        headers["If-Modified-Since"] = state["last_modified"]
    return headers


def changed(state: dict[str, Any], seen: Seen | None) -> bool | None:
    """Whether the page changed since the state was kept (None: first fetch, or not known)."""
    if seen is None or not state:
        return None
    if seen.status == 304:
        return False
    return seen.fingerprint != state.get("fp") if state.get("fp") else None


def next_state(spec: RecrawlSpec, kind: str, state: dict[str, Any], seen: Seen | None,
               keep: dict[str, Any] | None = None) -> tuple[float, str] | None:
    """(seconds until the next fetch, the state to keep), or None: the kind is not rechecked.
    ``keep``: what the response's callback keeps (``KEPT`` keys), else the state's are carried over."""
    base = spec.intervals.get(kind)
    if base is None:
        return None
    interval = float(state.get("interval") or base)
    change = changed(state, seen)
    if spec.adaptive and change is not None:
        interval = interval * SHRINK if change else interval * GROW
        interval = min(spec.max_seconds or interval, max(spec.min_seconds or interval, interval))
    elif not spec.adaptive:
        interval = base
    kept = {"interval": interval, "changed": change,
            "etag": (seen.etag if seen else None) or state.get("etag"),
            "last_modified": (seen.last_modified if seen else None) or state.get("last_modified"),
            "fp": (seen.fingerprint if seen else None) or state.get("fp"),
            **{key: state[key] for key in KEPT if key in state}, **(keep or {})}
    return interval, json.dumps({k: v for k, v in kept.items() if v is not None})
