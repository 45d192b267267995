"""Alert rules: add (checked), list, remove. A rule looks only at changes made after it was added.

Kinds, and the change each one watches:

``price_below``    an offer_history row that takes a price below ``threshold`` (from at or above it)
``price_drop``     an offer_history row whose price fell by ``threshold`` percent or more
``back_in_stock``  a stock_changes row from any other availability to ``in_stock``
``crawl_failed``   a crawl_samples row of a finished crawl that failed its health checks

A rule's scope is one source, one release (every shop's offers of it) or one offer; none: all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, func, select, update

from recordhound.alerts.deliver import end_removed
from recordhound.db.engine import lock_for_writing
from recordhound.db.ids import insert_with_ids
from recordhound.db.models import AlertRule, CrawlSample, Offer, OfferHistory, Release, Source, StockChange
from recordhound.exceptions import AlertError

EVENTS: dict[str, Any] = {"price_below": OfferHistory, "price_drop": OfferHistory,
                          "back_in_stock": StockChange, "crawl_failed": CrawlSample}
KINDS = tuple(EVENTS)
MAX_THRESHOLD = Decimal(10) ** 10  # alert_rules.threshold is NUMERIC(12, 2)
MAX_ID = 2**31 - 1  # ids are INTEGER


def _hundredths(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"))


@dataclass(frozen=True)
class RuleSpec:
    kind: str
    notify: str  # an Apprise URL: json://host/path, slack://..., mailto://...
    percent: Decimal | None = None  # price_drop
    price: Decimal | None = None  # price_below
    currency: str | None = None  # price_below: only prices in this currency
    source: str | None = None  # a source's name
    release: int | None = None
    offer: int | None = None


def add_rule(engine: Engine, spec: RuleSpec) -> int:
    """Check the rule and store it; returns its id. Raises AlertError saying what to fix."""
    _check(spec)
    with engine.begin() as conn:
        lock_for_writing(conn)
        source_id = _source_id(conn, spec.source)
        for model, wanted in ((Release, spec.release), (Offer, spec.offer)):
            if wanted is not None and conn.execute(select(model.id).where(model.id == wanted)).scalar() is None:
                raise AlertError(f"no {model.__tablename__[:-1]} with id {wanted}")
        event = EVENTS[spec.kind]
        after = conn.execute(select(func.max(event.id))).scalar() or 0
        threshold = spec.percent if spec.kind == "price_drop" else spec.price
        return insert_with_ids(conn, AlertRule, [{
            "kind": spec.kind, "source_id": source_id, "release_id": spec.release, "offer_id": spec.offer,
            "threshold": threshold, "currency": spec.currency.upper() if spec.currency else None,
            "notify": spec.notify, "after_id": after, "created_at": datetime.now(UTC), "removed_at": None}])[0]


def _check(spec: RuleSpec) -> None:
    if spec.kind not in KINDS:
        raise AlertError(f"unknown alert kind {spec.kind!r}: use one of {', '.join(KINDS)}")
    for option, value in (("--percent", spec.percent), ("--price", spec.price)):
        if value is not None and (not value.is_finite() or abs(value) >= MAX_THRESHOLD):
            raise AlertError(f"{option} {value} is not a number a rule holds (below {MAX_THRESHOLD:,})")
    if spec.percent is not None and _hundredths(spec.percent) != spec.percent:
        raise AlertError(f"--percent {spec.percent}: a rule holds a percent to two decimals (such as 12.5)")
    if spec.currency is not None and not (len(spec.currency) == 3 and spec.currency.isascii()
                                          and spec.currency.isalpha()):
        raise AlertError(f"--currency {spec.currency!r} is not a currency code: three letters, such as EUR")
    for option, wanted in (("--release", spec.release), ("--offer", spec.offer)):
        if wanted is not None and not 0 < wanted <= MAX_ID:
            raise AlertError(f"{option} {wanted} is not an id (1 to {MAX_ID:,})")
    if spec.kind == "price_drop" and not (spec.percent and 0 < spec.percent <= 100):
        raise AlertError("a price_drop rule needs --percent between 0 and 100 (a drop of that many percent)")
    if spec.kind == "price_below" and not (spec.price and spec.price > 0):
        raise AlertError("a price_below rule needs --price above 0")
    if sum(x is not None for x in (spec.source, spec.release, spec.offer)) > 1:
        raise AlertError("give at most one of --source, --release, --offer")
    if spec.kind == "crawl_failed" and (spec.release is not None or spec.offer is not None):
        raise AlertError("a crawl_failed rule is per source (--source) or for all sources")
    if not usable_url(spec.notify):
        raise AlertError(f"{_private(spec.notify)!r} is not a notification URL Apprise can use "
                         "(for example json://host:port/path, slack://..., mailto://...)")


def usable_url(url: str) -> bool:
    """One notification URL Apprise can use (several in one, "url1, url2", would share one dedupe key's
    header with the last of them only, and one failing would repeat the alert to the others)."""
    import apprise

    servers = apprise.Apprise()
    return bool(servers.add(url)) and len(servers) == 1


def _source_id(conn: Any, name: str | None) -> int | None:
    if name is None:
        return None
    found = conn.execute(select(Source.id).where(Source.name == name)).scalar()
    if found is None:
        raise AlertError(f"no source named {name!r}: see `recordhound alerts list` or crawl it first")
    return int(found)


def list_rules(engine: Engine) -> list[dict[str, Any]]:
    """Active rules, oldest first, with their source's name and the URL's secrets hidden."""
    with engine.connect() as conn:
        rows = conn.execute(select(AlertRule, Source.name.label("source_name"))
                            .outerjoin(Source, Source.id == AlertRule.source_id)
                            .where(AlertRule.removed_at.is_(None)).order_by(AlertRule.id)).all()
    return [{"id": r.id, "kind": r.kind, "source": r.source_name, "release": r.release_id, "offer": r.offer_id,
             "threshold": r.threshold, "currency": r.currency, "notify": _private(r.notify),
             "description": describe(r, r.source_name)} for r in rows]


def describe(rule: Any, source_name: str | None) -> str:
    what = {"price_below": f"price below {rule.threshold} {rule.currency or ''}".rstrip(),
            "price_drop": f"price drop of {rule.threshold} % or more", "back_in_stock": "back in stock",
            "crawl_failed": "crawl failed its health checks"}[rule.kind]
    scope = (f"source {source_name}" if source_name else f"release #{rule.release_id}" if rule.release_id
             else f"offer #{rule.offer_id}" if rule.offer_id else "every source")
    return f"{what} · {scope}"


def remove_rule(engine: Engine, rule_id: int) -> None:
    """The rule stops firing: its alerts not yet sent are not sent (``failed``, "rule removed"; one being sent
    right now may still arrive); it and its deliveries stay on record."""
    with engine.begin() as conn:
        done = conn.execute(update(AlertRule).where(AlertRule.id == rule_id, AlertRule.removed_at.is_(None))
                            .values(removed_at=datetime.now(UTC)))
        if not done.rowcount:
            raise AlertError(f"no active alert rule #{rule_id}: see `recordhound alerts list`")
        end_removed(conn, None, rule_id)  # (one whose sender died: by the next ``alerts send``)


def _private(url: str) -> str:
    """The URL as Apprise shows it with its secrets hidden (tokens, passwords)."""
    import apprise

    servers = apprise.Apprise()
    if not servers.add(url):
        return url.split("://", 1)[0] + "://..." if "://" in url else "(not a URL)"
    private = str(servers[0].url(privacy=True))
    return private if "?" in url else private.split("?", 1)[0]  # without the options Apprise adds
