"""The Alerts page: add and remove alert rules, and see the latest deliveries with their outcome.

The same rules as `recordhound alerts add|list|remove` (recordhound/alerts/rules.py checks them);
sending is `recordhound alerts send` (cron, or after crawls): the admin never sends anything.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlencode

from sqladmin import BaseView, expose
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from recordhound.admin.review import context
from recordhound.alerts.history import recent_deliveries
from recordhound.alerts.rules import KINDS, RuleSpec, add_rule, list_rules, remove_rule
from recordhound.db.models import Source
from recordhound.exceptions import AlertError

SHOWN_DELIVERIES = 50


def _back(request: Request, message: str, error: bool = False) -> Response:
    url = str(request.url_for("admin:view-alerts")) + "?" + urlencode({"error" if error else "done": message})
    return RedirectResponse(url, status_code=303)


def _text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    return value.strip() or None if isinstance(value, str) else None


def _number(form: FormData, name: str, cast: type[Any]) -> Any:
    value = _text(form, name)
    if value is None:
        return None
    try:
        return cast(value)
    except (ValueError, InvalidOperation) as exc:
        raise AlertError(f"{name} must be a number, got {value!r}") from exc


def spec_from_form(form: FormData) -> RuleSpec:
    kind = _text(form, "kind") or ""
    value = _number(form, "value", Decimal)
    return RuleSpec(kind=kind, notify=_text(form, "notify") or "",
                    percent=value if kind == "price_drop" else None,
                    price=value if kind == "price_below" else None, currency=_text(form, "currency"),
                    source=_text(form, "source"), release=_number(form, "release", int),
                    offer=_number(form, "offer", int))


def _sources(request: Request) -> list[str]:
    with context(request).engine.connect() as conn:
        return list(conn.execute(select(Source.name).order_by(Source.name)).scalars())


class Alerts(BaseView):
    name, icon = "Alerts", "fa-solid fa-bell"
    identity = "alerts"

    @expose("/alerts", methods=["GET"], identity="alerts")
    async def page(self, request: Request) -> Response:
        engine = context(request).engine
        return await self.templates.TemplateResponse(request, "recordhound/alerts.html", {
            "rules": await run_in_threadpool(list_rules, engine),
            "deliveries": await run_in_threadpool(recent_deliveries, engine, SHOWN_DELIVERIES),
            "sources": await run_in_threadpool(_sources, request), "kinds": KINDS,
            "done": request.query_params.get("done"), "error": request.query_params.get("error")})

    @expose("/alerts/add", methods=["POST"], identity="alerts-add")
    async def add(self, request: Request) -> Response:
        try:
            spec = spec_from_form(await request.form())
            rule_id = await run_in_threadpool(add_rule, context(request).engine, spec)
        except AlertError as exc:
            return _back(request, str(exc), error=True)
        return _back(request, f"alert rule #{rule_id} added")

    @expose("/alerts/remove", methods=["POST"], identity="alerts-remove")
    async def remove(self, request: Request) -> Response:
        rule = _text(await request.form(), "rule_id") or ""
        try:
            if not rule.isdigit():
                raise AlertError("pick a rule to remove")
            await run_in_threadpool(remove_rule, context(request).engine, int(rule))
        except AlertError as exc:
            return _back(request, str(exc), error=True)
        return _back(request, f"alert rule #{rule} removed")
