"""Alerts where they meet slow senders, removed rules, many changes at once and bad input (a review's
findings), on SQLite and PostgreSQL, through a real HTTP receiver (port 0) and the real command.

- A sender whose attempt outlasted its claim (another run took the alert over and sent it) does not
  overwrite that run's outcome: the alert stays ``sent`` and is never sent a third time (before: set back
  to ``pending`` by the slow sender's error, then sent again).
- A removed rule sends nothing more: its alerts not yet sent end ``failed`` ("rule removed").
- 70,000 changes planned at once (a first crawl of a large shop after a rule was added): each planned
  once (before: PostgreSQL refused the planner's 70,000 parameters, on every run, and no alert of any
  rule was sent again).
- Bad input to ``alerts add`` is one line and a non-zero exit, nothing stored (before: tracebacks)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from sqlalchemy import Engine, func, insert, select, update

from recordhound.alerts.deliver import Delivered, deliver
from recordhound.alerts.planner import plan
from recordhound.alerts.rules import RuleSpec, add_rule, list_rules, remove_rule
from recordhound.alerts.service import run_alerts
from recordhound.db.models import AlertDelivery, AlertRule, Offer, OfferHistory
from recordhound.db.sources import ensure_source
from tests.integration.test_alerts import FAST, Receiver, _deliveries, _offer, engine

__all__ = ["engine"]  # (the fixture)
MANY = 70_000


def test_a_slow_sender_does_not_overwrite_the_outcome_of_the_run_that_took_its_alert_over(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00")
    with Receiver() as receiver:
        add_rule(engine, RuleSpec(kind="price_drop", notify=receiver.url, percent=Decimal(10)))
        _offer(engine, source, "10.00")
        plan(engine, datetime.now(UTC))
        took_over = replace(FAST, claim_seconds=0)  # the slow sender's claim counts as stale at once

        def slow(url: str, title: str, body: str, key: str, timeout: float) -> str | None:
            assert deliver(engine, took_over).sent == 1  # meanwhile another run sends it and records it
            return "HTTP 500: the receiver gave up on a slow sender"

        deliver(engine, FAST, slow)
        assert [(d.status, d.attempts) for d in _deliveries(engine)] == [("sent", 2)]
        assert run_alerts(engine, FAST).sent == 0
    assert len(receiver.accepted) == 1


def test_a_removed_rule_sends_nothing_more(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00")
    with Receiver(failures=1) as receiver:
        rule = add_rule(engine, RuleSpec(kind="price_drop", notify=receiver.url, percent=Decimal(10)))
        _offer(engine, source, "10.00")
        assert run_alerts(engine, replace(FAST, wait_seconds=0)).retrying == 1  # refused once: to be retried
        remove_rule(engine, rule)
        outcome = run_alerts(engine, FAST)
    assert (outcome.sent, receiver.accepted, receiver.refused) == (0, [], 1)
    assert [(d.status, d.last_error) for d in _deliveries(engine)] == [("failed", "rule removed")]


def test_a_rule_removed_while_its_alert_is_sent_ends_it_and_sending_returns(engine: Engine) -> None:
    """The send fails after the rule was removed: the alert ends ``failed`` ("rule removed"), and ``deliver``
    returns at once (before: it stayed ``pending`` for good, and ``alerts send`` spun on it until its wait ran
    out, 200,000 statements in 45 s)."""
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00")
    rule = add_rule(engine, RuleSpec(kind="price_drop", notify="json://127.0.0.1:9/hook", percent=Decimal(10)))
    _offer(engine, source, "10.00")
    plan(engine, datetime.now(UTC))

    def removed_meanwhile(url: str, title: str, body: str, key: str, timeout: float) -> str | None:
        remove_rule(engine, rule)
        return "HTTP 500"

    outcome: list[Delivered] = []
    sending = threading.Thread(target=lambda: outcome.append(
        deliver(engine, replace(FAST, wait_seconds=60), removed_meanwhile)))
    sending.start()
    sending.join(30)
    assert not sending.is_alive(), "deliver did not return"
    assert [(d.status, d.last_error) for d in _deliveries(engine)] == [("failed", "rule removed")]
    assert outcome == [Delivered(sent=0, retrying=0, failed=1)]  # (as recorded: not "1 to retry")


def test_alerts_of_a_rule_removed_before_this_version_end_at_the_next_send(engine: Engine, database_url: str,
                                                                         tmp_path: Path) -> None:
    """A database whose removed rule still has a pending alert (removal left them so before): the real
    ``alerts send`` ends it and exits 0 (before: it spun until its 60 s wait ran out)."""
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00")
    rule = add_rule(engine, RuleSpec(kind="price_drop", notify="json://127.0.0.1:9/hook", percent=Decimal(10)))
    _offer(engine, source, "10.00")
    plan(engine, datetime.now(UTC))
    with engine.begin() as conn:  # removed as the version before did it: the rule only
        conn.execute(update(AlertRule).where(AlertRule.id == rule).values(removed_at=datetime.now(UTC)))
    done = subprocess.run([sys.executable, "-m", "recordhound", "alerts", "send"], cwd=tmp_path, timeout=50,
                          env={**os.environ, "DATABASE_URL": database_url}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [(d.status, d.last_error) for d in _deliveries(engine)] == [("failed", "rule removed")]


def test_many_changes_at_once_are_each_planned_once(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00")
    add_rule(engine, RuleSpec(kind="price_below", notify="json://127.0.0.1:9/hook", price=Decimal(15)))
    with engine.begin() as conn:
        offer = conn.execute(select(Offer.id)).scalar_one()
        first = conn.execute(select(func.coalesce(func.max(OfferHistory.id), 0))).scalar_one() + 1
        now = datetime.now(UTC)
        conn.execute(insert(OfferHistory), [  # up and down: each fall below 15 is a change to alert
            {"id": first + n, "offer_id": offer, "old_price": Decimal("20.00") if n % 2 == 0 else Decimal("9.00"),
             "new_price": Decimal("9.00") if n % 2 == 0 else Decimal("20.00"), "old_currency": "EUR",
             "new_currency": "EUR", "changed_at": now} for n in range(2 * MANY)])
    assert plan(engine, datetime.now(UTC)) == MANY
    assert plan(engine, datetime.now(UTC)) == 0
    with engine.connect() as conn:
        assert conn.execute(select(func.count(func.distinct(AlertDelivery.event_id)))).scalar_one() == MANY


def test_bad_input_to_alerts_add_is_one_line_and_stores_nothing(engine: Engine, database_url: str,
                                                                tmp_path: Path) -> None:
    ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    hook = ["--notify", "json://127.0.0.1:9/hook"]
    cases = {  # arguments → what the one line says
        ("--kind", "price-drop", "--percent", "abc"): "'abc' is not a number",
        ("--kind", "price-drop", "--percent", "0.001"): "to two decimals",
        ("--kind", "price-below", "--price", "NaN"): "--price NaN is not a number a rule holds",
        ("--kind", "price-below", "--price", "1e20"): "is not a number a rule holds",
        ("--kind", "price-below", "--price", "10", "--currency", "EURO"): "not a currency code",
        ("--kind", "back-in-stock", "--release", "99999999999999999999"): "is not an id",
        ("--kind", "back-in-stock", "--offer", "-3"): "is not an id",
        ("--kind", "back-in-stock", "--notify", "json://127.0.0.1:9/a, json://127.0.0.1:9/b"): "not a notification URL",
    }
    for args, said in cases.items():
        given = args if "--notify" in args else (*args, *hook)
        done = subprocess.run([sys.executable, "-m", "recordhound", "alerts", "add", *given], cwd=tmp_path,
                              env={**os.environ, "DATABASE_URL": database_url}, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr[-3000:])
        errors = [line for line in done.stderr.splitlines() if line.lower().startswith("error")]
        assert len(errors) == 1 and said in errors[0], (args, done.stderr[-3000:])
    assert list_rules(engine) == []
