"""Send planned alerts through Apprise, with retries and backoff, and record each outcome.

Each attempt is claimed first (``sending``, attempts + 1, committed), then sent, then recorded
(``sent``; ``pending`` with the next attempt's time; ``failed`` after the last attempt). A sender
that dies between the send and the record leaves the alert ``sending``; once it has been so for
RECORDHOUND_ALERTS_CLAIM_SECONDS another run sends it again. Delivery is therefore at-least-once,
never exactly-once: the receiver can drop a repeat by its dedupe key (the last line of the
message, and the ``X-Recordhound-Dedupe-Key`` header of json://, form:// and xml:// webhooks).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from sqlalchemy import Connection, Engine, and_, func, or_, select, update

from recordhound.alerts.config import AlertsConfig
from recordhound.db.models import AlertDelivery, AlertRule
from recordhound import failpoints

logger = logging.getLogger(__name__)
HEADER_SCHEMES = ("json", "jsons", "form", "forms", "xml", "xmls")  # webhooks that take +Header=value
Sender = Callable[[str, str, str, str, float], "str | None"]


@dataclass
class Delivered:
    sent: int = 0
    retrying: int = 0
    failed: int = 0


def send(url: str, title: str, body: str, key: str, timeout: float) -> str | None:
    """One attempt through Apprise; None when delivered, else what went wrong."""
    import apprise

    servers = apprise.Apprise()
    if not servers.add(_with_options(url, key, timeout)):
        return "Apprise cannot use this notification URL"
    with apprise.LogCapture(level=logging.WARNING) as logs:
        if servers.notify(body=body, title=title, body_format=apprise.NotifyFormat.TEXT):
            return None
        return " ".join(str(logs.getvalue()).split())[:1000] or "not delivered"


def _with_options(url: str, key: str, timeout: float) -> str:
    scheme = url.split("://", 1)[0].lower()
    extra = f"cto={timeout:g}&rto={timeout:g}"
    if scheme in HEADER_SCHEMES:
        extra += f"&+X-Recordhound-Dedupe-Key={quote(key)}"
    return f"{url}{'&' if '?' in url else '?'}{extra}"


def deliver(engine: Engine, config: AlertsConfig, sender: Sender = send) -> Delivered:
    """Send every alert that is due; wait for retries due within ``config.wait_seconds``."""
    done = Delivered()
    deadline = time.monotonic() + config.wait_seconds
    with engine.begin() as conn:
        end_removed(conn, config.claim_seconds)
    while True:
        for delivery_id in _due(engine, config):
            _attempt(engine, config, delivery_id, sender, done)
        wait = _next_wait(engine)
        if wait is None or time.monotonic() + wait > deadline:
            return done
        time.sleep(max(wait, 0.0))


def _due(engine: Engine, config: AlertsConfig) -> list[int]:
    now = datetime.now(UTC)
    stale = now - timedelta(seconds=config.claim_seconds)
    with engine.connect() as conn:
        return list(conn.execute(select(AlertDelivery.id).join(AlertRule).where(or_(
            and_(AlertDelivery.status == "pending", AlertDelivery.next_attempt_at <= now),
            and_(AlertDelivery.status == "sending", AlertDelivery.next_attempt_at <= stale),
        ), AlertRule.removed_at.is_(None)).order_by(AlertDelivery.id)).scalars())


def end_removed(conn: Connection, claim_seconds: float | None, rule_id: int | None = None,
                delivery_id: int | None = None) -> int:
    """The alerts of removed rules (of ``rule_id``, or the one ``delivery_id``, else all) that wait to be sent end
    ``failed``, "rule removed", as do those whose sender died (``sending`` past ``claim_seconds``; None: those
    are left): nothing claims them again (a database from before removal ended them; a rule removed while one
    of its alerts was being sent, which failed). Returns how many."""
    removed = select(AlertRule.id).where(AlertRule.removed_at.is_not(None))
    waiting = AlertDelivery.status == "pending"
    if claim_seconds is not None:
        stale = datetime.now(UTC) - timedelta(seconds=claim_seconds)
        waiting = or_(waiting, and_(AlertDelivery.status == "sending", AlertDelivery.next_attempt_at <= stale))
    which = [AlertDelivery.id == delivery_id] if delivery_id is not None else []
    return int(conn.execute(update(AlertDelivery).where(
        AlertDelivery.rule_id.in_(removed.where(AlertRule.id == rule_id) if rule_id is not None else removed),
        waiting, *which,
    ).values(status="failed", last_error="rule removed")).rowcount)


def _next_wait(engine: Engine) -> float | None:
    with engine.connect() as conn:
        soonest = conn.execute(select(func.min(AlertDelivery.next_attempt_at)).join(AlertRule)
                               .where(AlertDelivery.status == "pending", AlertRule.removed_at.is_(None))).scalar()
    if soonest is None:
        return None
    soonest = soonest if soonest.tzinfo else soonest.replace(tzinfo=UTC)
    return float((soonest - datetime.now(UTC)).total_seconds())


def _attempt(engine: Engine, config: AlertsConfig, delivery_id: int, sender: Sender, done: Delivered) -> None:
    claimed = _claim(engine, config, delivery_id)
    if claimed is None:
        return  # another sender has it
    attempts, url, title, body, key = claimed
    error = sender(url, title, body, key, config.timeout_seconds)
    failpoints.hit("alerts.after_send")
    now = datetime.now(UTC)
    if error is None:
        values: dict[str, object] = {"status": "sent", "sent_at": now}
        done.sent += 1
    elif attempts >= config.max_attempts:
        values = {"status": "failed", "last_error": error}
        done.failed += 1
        logger.warning("Alert %s failed after %d attempts: %s", key, attempts, error)
    else:
        values = {"status": "pending", "last_error": error,
                  "next_attempt_at": now + timedelta(seconds=config.backoff_seconds(attempts))}
        done.retrying += 1
    with engine.begin() as conn:  # only while the claim is still this sender's (compare-and-set, as ``_claim``)
        recorded = conn.execute(update(AlertDelivery).where(
            AlertDelivery.id == delivery_id, AlertDelivery.status == "sending", AlertDelivery.attempts == attempts,
        ).values(**values))
        if values["status"] == "pending" and end_removed(conn, None, delivery_id=delivery_id):  # removed meanwhile
            done.retrying, done.failed = done.retrying - 1, done.failed + 1
    if not recorded.rowcount:  # this attempt outlasted RECORDHOUND_ALERTS_CLAIM_SECONDS: another sender took
        logger.warning("Alert %s: attempt %d took longer than RECORDHOUND_ALERTS_CLAIM_SECONDS and another sender "
                       "took it over; that sender's outcome stands (this one's: %s)", key, attempts, error or "sent")


def _claim(engine: Engine, config: AlertsConfig, delivery_id: int) -> tuple[int, str, str, str, str] | None:
    """Mark one due delivery ``sending`` (compare-and-set on its state): at most one sender has it."""
    now = datetime.now(UTC)
    stale = now - timedelta(seconds=config.claim_seconds)
    with engine.begin() as conn:
        delivery = conn.execute(select(AlertDelivery.status, AlertDelivery.attempts, AlertDelivery.title,
                                       AlertDelivery.body, AlertDelivery.dedupe_key, AlertRule.notify,
                                       AlertRule.removed_at)
                                .join(AlertRule).where(AlertDelivery.id == delivery_id)).one()
        if delivery.removed_at is not None:  # removed since ``_due`` (``remove_rule`` ends its deliveries)
            return None
        claimed = conn.execute(update(AlertDelivery).where(
            AlertDelivery.id == delivery_id, AlertDelivery.status == delivery.status,
            AlertDelivery.attempts == delivery.attempts,
            or_(AlertDelivery.status == "pending", AlertDelivery.next_attempt_at <= stale),
        ).values(status="sending", attempts=delivery.attempts + 1, next_attempt_at=now))
        if not claimed.rowcount:
            return None
    return delivery.attempts + 1, delivery.notify, delivery.title, delivery.body, delivery.dedupe_key
