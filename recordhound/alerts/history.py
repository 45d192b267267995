"""What was sent: the latest deliveries with their outcome (the CLI and the admin's Alerts page)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, select

from recordhound.db.models import AlertDelivery

SHOWN = ("id", "rule_id", "event_kind", "event_id", "dedupe_key", "title", "status", "attempts",
         "last_error", "created_at", "sent_at", "next_attempt_at")


def recent_deliveries(engine: Engine, limit: int = 20) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(select(*(getattr(AlertDelivery, name) for name in SHOWN))
                            .order_by(AlertDelivery.id.desc()).limit(limit)).all()
    return [dict(row._mapping) for row in rows]
