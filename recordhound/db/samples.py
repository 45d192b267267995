"""Crawl samples: a crawl's running totals at one moment, for the crawl-rate chart and alerts.

The store pipeline writes one when the crawl opens, one every progress interval and one when it
ends (``finished``, with ``health_error`` when the crawl failed its health checks)."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine

from recordhound.db.engine import writing
from recordhound.db.ids import insert_with_ids
from recordhound.db.models import CrawlSample


def record_sample(target: Engine | Connection, source_id: int, progress: dict[str, Any], finished: bool = False,
                  health_error: str | None = None, at: datetime | None = None) -> int:
    """One row from the progress dict the pipeline publishes (``pages``, ``items``, ``stored``)."""
    row = {"source_id": source_id, "at": at or datetime.now(UTC), "pages": int(progress.get("pages") or 0),
           "items": int(progress.get("items") or 0), "stored": int(progress.get("stored") or 0),
           "finished": finished, "health_error": health_error}
    with writing(target) as conn:  # in the caller's transaction when given a connection
        return insert_with_ids(conn, CrawlSample, [row])[0]


def readable_errors(errors: dict[str, int]) -> str:
    """``{"field_price": 1, "http_404": 6}`` as "7 problems: 6 × http_404, 1 × field_price"."""
    total = sum(errors.values())
    parts = ", ".join(f"{count} × {kind}" for kind, count in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} problem{'s' if total != 1 else ''}: {parts}"


def readable_error(message: object) -> str:
    """A source's ``error_message`` for people: one stored by older versions as
    "7 problems: {'field_price': 1, ...}" (a dict's repr) is rewritten as :func:`readable_errors`."""
    if not message:
        return ""
    text = str(message)
    found = re.fullmatch(r"\d+ problems: (\{.*\})", text, re.S)
    if found is None:
        return text
    try:
        errors = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return text
    if not isinstance(errors, dict) or not all(isinstance(v, int) for v in errors.values()):
        return text
    return readable_errors({str(k): v for k, v in errors.items()})
