"""`recordhound alerts add|list|remove|send|deliveries`: alert rules from a terminal."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import click

from recordhound.alerts.rules import KINDS
from recordhound.cli_settings import current_settings, setting_option

if TYPE_CHECKING:
    from sqlalchemy import Engine


class _Decimal(click.ParamType):
    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Decimal:
        try:
            return value if isinstance(value, Decimal) else Decimal(value)
        except InvalidOperation:
            self.fail(f"{value!r} is not a number", param, ctx)


DECIMAL = _Decimal()


def _engine() -> Engine:
    from recordhound.config import database_url
    from recordhound.db.migrate import open_database

    return open_database(database_url(current_settings()))


@click.group()
@setting_option
def alerts() -> None:
    """Alert rules (price below, price drop, back in stock, crawl failed) sent through Apprise."""


@alerts.command("add")
@click.option("--kind", type=click.Choice([k.replace("_", "-") for k in KINDS]), required=True)
@click.option("--notify", required=True, metavar="URL", help="an Apprise URL: json://host/path, slack://..., mailto://...")
@click.option("--percent", type=DECIMAL, default=None, help="price-drop: a drop of at least this many percent")
@click.option("--price", type=DECIMAL, default=None, help="price-below: a price below this")
@click.option("--currency", default=None, help="price-below: only prices in this currency")
@click.option("--source", default=None, help="only this source (by name)")
@click.option("--release", type=int, default=None, help="only this release's offers (every shop, every format)")
@click.option("--offer", type=int, default=None, help="only this offer")
def alerts_add(kind: str, notify: str, percent: Decimal | None, price: Decimal | None, currency: str | None,
               source: str | None, release: int | None, offer: int | None) -> None:
    """Add a rule; it looks at changes made from now on."""
    from recordhound.alerts.rules import RuleSpec, add_rule

    spec = RuleSpec(kind.replace("-", "_"), notify, percent, price, currency, source, release, offer)
    click.echo(f"alert rule #{add_rule(_engine(), spec)} added")


@alerts.command("list")
@click.option("--json", "as_json", is_flag=True)
def alerts_list(as_json: bool) -> None:
    """Active rules (notification URLs with their secrets hidden)."""
    from recordhound.alerts.rules import list_rules

    rules = list_rules(_engine())
    if as_json:
        click.echo(json.dumps(rules, indent=1, default=str))
        return
    for rule in rules:
        click.echo(f"#{rule['id']} {rule['description']} → {rule['notify']}")
    if not rules:
        click.echo("no alert rules: add one with `recordhound alerts add`")


@alerts.command("remove")
@click.argument("rule_id", type=int)
def alerts_remove(rule_id: int) -> None:
    """Stop a rule (it and its deliveries stay on record)."""
    from recordhound.alerts.rules import remove_rule

    remove_rule(_engine(), rule_id)
    click.echo(f"alert rule #{rule_id} removed")


@alerts.command("send")
@setting_option
def alerts_send() -> None:
    """Plan an alert for each new matching change and send what is due (run it after crawls, or from cron)."""
    from recordhound.alerts.config import AlertsConfig
    from recordhound.alerts.service import run_alerts

    done = run_alerts(_engine(), AlertsConfig.from_settings(current_settings()))
    click.echo(f"alerts: {done.sent} sent, {done.retrying} waiting to retry, {done.failed} failed")


@alerts.command("deliveries")
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def alerts_deliveries(limit: int, as_json: bool) -> None:
    """The latest deliveries with their outcome, newest first."""
    from recordhound.alerts.history import recent_deliveries

    found = recent_deliveries(_engine(), limit)
    if as_json:
        click.echo(json.dumps(found, indent=1, default=str))
        return
    for d in found:
        click.echo(_line(d))


def _line(d: dict[str, Any]) -> str:
    error = f" ({d['last_error']})" if d["last_error"] and d["status"] != "sent" else ""
    return f"#{d['id']} rule #{d['rule_id']} {d['status']} after {d['attempts']} attempt(s): {d['title']}{error}"


def register(main: click.Group) -> None:
    main.add_command(alerts)
