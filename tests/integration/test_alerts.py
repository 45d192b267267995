"""Alert rules delivered through Apprise into a real HTTP receiver (port 0), on SQLite and PostgreSQL.

A change (one offer_history row, one stock transition, one failed crawl) gives one delivery per
rule, retried with backoff until the receiver takes it, never sent twice once recorded as sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, select

from recordhound.alerts.config import AlertsConfig
from recordhound.alerts.rules import RuleSpec, add_rule, list_rules, remove_rule
from recordhound.alerts.service import run_alerts
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.db.models import AlertDelivery
from recordhound.db.offers import OfferRow, set_price, write_offers
from recordhound.db.releases import ReleaseRow, write_releases
from recordhound.db.samples import record_sample
from recordhound.db.sources import ensure_source
from recordhound.exceptions import AlertError

HOUR = timedelta(hours=1)
FAST = AlertsConfig(max_attempts=5, retry_base_seconds=0.05, retry_cap_seconds=0.2, wait_seconds=5.0,
                    claim_seconds=300.0, timeout_seconds=5.0)


class Receiver:
    """An HTTP server that answers 500 to its first ``failures`` POSTs, then 200; keeps every body."""

    def __init__(self, failures: int = 0) -> None:
        self.failures, self.accepted, self.refused = failures, [], 0  # type: ignore[var-annotated]
        self.headers: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if receiver.refused < receiver.failures:
                    receiver.refused += 1
                    self.send_response(500)
                else:
                    receiver.accepted.append(json.loads(body))
                    receiver.headers.append(dict(self.headers))
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = make_engine(database_url)
    upgrade(made)
    yield made
    made.dispose()


def _offer(engine: Engine, source: int, price: str, availability: str = "in_stock", sku: str = "sku-1") -> None:
    now = datetime.now(UTC)
    with engine.begin() as conn:
        release = _release(conn, source)
        write_offers(conn, source, [OfferRow(sku, "http://127.0.0.1/r/1", release, Decimal(price), "EUR",
                                             availability == "in_stock", availability, "LP", "new")],
                     now, HOUR, threshold_pct=1000.0)


def _release(conn: Connection, source: int) -> int:
    row = ReleaseRow("demo|r1", "Discovery", None, "CAT-1", 2001, (), frozenset())
    return write_releases(conn, source, {row.natural_key: row})[0][row.natural_key]


def _deliveries(engine: Engine) -> list[AlertDelivery]:
    with engine.connect() as conn:
        return list(conn.execute(select(AlertDelivery).order_by(AlertDelivery.id)).all())


def test_a_price_drop_rule_fires_once_per_drop(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00")
    with Receiver() as receiver:
        add_rule(engine, RuleSpec(kind="price_drop", notify=receiver.url, percent=Decimal(10), source="demo"))
        _offer(engine, source, "19.50")  # -2.5 %: not a drop of 10 %
        _offer(engine, source, "17.00")  # -12.8 %: fires
        assert run_alerts(engine, FAST).sent == 1
        assert run_alerts(engine, FAST).sent == 0  # the same change is never sent twice
        _offer(engine, source, "15.00")  # -11.8 %: a second drop, a second alert
        _offer(engine, source, "16.00")  # up: nothing
        run_alerts(engine, FAST)
    assert len(receiver.accepted) == 2
    first = receiver.accepted[0]
    assert "19.50" in first["message"] and "17.00" in first["message"] and "Discovery" in first["title"]
    keys = [d.dedupe_key for d in _deliveries(engine)]
    assert len(set(keys)) == 2 and keys[0] in first["message"]
    assert receiver.headers[0]["X-Recordhound-Dedupe-Key"] == keys[0]
    assert [d.status for d in _deliveries(engine)] == ["sent", "sent"]


def test_a_receiver_that_fails_twice_gets_one_delivery_after_retries(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "30.00")
    with Receiver(failures=2) as receiver:
        add_rule(engine, RuleSpec(kind="price_below", notify=receiver.url, price=Decimal("25"), source="demo"))
        _offer(engine, source, "24.00")
        outcome = run_alerts(engine, FAST)
        run_alerts(engine, FAST)
    assert receiver.refused == 2 and len(receiver.accepted) == 1
    assert outcome.sent == 1
    [delivery] = _deliveries(engine)
    assert (delivery.status, delivery.attempts) == ("sent", 3)
    assert delivery.last_error  # the refusals are recorded


def test_a_held_price_alerts_only_once_approved(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "40.00")
    with Receiver() as receiver:
        add_rule(engine, RuleSpec(kind="price_drop", notify=receiver.url, percent=Decimal(5)))
        now = datetime.now(UTC)
        with engine.begin() as conn:  # a 50 % drop over the review threshold: held, no history row
            release = _release(conn, source)
            counts = write_offers(conn, source, [OfferRow("sku-1", "http://127.0.0.1/r/1", release, Decimal("20.00"),
                                                          "EUR", True, "in_stock", "LP", "new")], now, HOUR, 5.0)
        assert len(counts.held) == 1
        run_alerts(engine, FAST)
        assert receiver.accepted == []
        with engine.begin() as conn:  # the reviewer approves: the apply worker writes the price
            set_price(conn, counts.held[0].offer_id, Decimal("20.00"), "EUR", now, (Decimal("40.00"), "EUR"))
        run_alerts(engine, FAST)
    assert len(receiver.accepted) == 1


def test_back_in_stock_fires_once_per_transition(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00", "sold_out")
    with Receiver() as receiver:
        add_rule(engine, RuleSpec(kind="back_in_stock", notify=receiver.url, source="demo"))
        _offer(engine, source, "20.00", "sold_out")  # no transition
        run_alerts(engine, FAST)
        _offer(engine, source, "20.00", "in_stock")  # back: fires
        _offer(engine, source, "20.00", "in_stock")
        run_alerts(engine, FAST)
        run_alerts(engine, FAST)
        _offer(engine, source, "20.00", "sold_out")
        _offer(engine, source, "20.00", "in_stock")  # back again: a second transition
        run_alerts(engine, FAST)
    assert len(receiver.accepted) == 2
    assert "back in stock" in receiver.accepted[0]["title"]


def test_a_failed_crawl_alerts_its_source_rule(engine: Engine) -> None:
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    other = ensure_source(engine, "other", "html", "http://127.0.0.2/")
    with Receiver() as receiver:
        add_rule(engine, RuleSpec(kind="crawl_failed", notify=receiver.url, source="demo"))
        record_sample(engine, source, {"pages": 3, "items": 0, "stored": 0}, finished=True, health_error=None)
        record_sample(engine, other, {"pages": 0, "items": 0, "stored": 0}, finished=True,
                      health_error="pages fetched: fetched no page")
        record_sample(engine, source, {"pages": 0, "items": 0, "stored": 0}, finished=True,
                      health_error="items stored: stored and parked no item from 5 product pages")
        run_alerts(engine, FAST)
        run_alerts(engine, FAST)
    assert len(receiver.accepted) == 1
    assert "stored and parked no item" in receiver.accepted[0]["message"]


def test_rules_are_checked_listed_and_removed(engine: Engine) -> None:
    ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    with pytest.raises(AlertError, match="percent"):
        add_rule(engine, RuleSpec(kind="price_drop", notify="json://127.0.0.1:9/x"))
    with pytest.raises(AlertError, match="no source named"):
        add_rule(engine, RuleSpec(kind="back_in_stock", notify="json://127.0.0.1:9/x", source="nope"))
    with pytest.raises(AlertError, match="notification URL"):
        add_rule(engine, RuleSpec(kind="back_in_stock", notify="not a url"))
    rule = add_rule(engine, RuleSpec(kind="back_in_stock", notify="json://127.0.0.1:9/x", source="demo"))
    assert [r["id"] for r in list_rules(engine)] == [rule]
    remove_rule(engine, rule)
    assert list_rules(engine) == []


def test_a_crash_between_send_and_record_sends_again_with_the_same_key(
        engine: Engine, database_url: str, tmp_path: Path) -> None:
    """At-least-once: the process dies after the receiver took the alert and before it was recorded;
    the next run sends it again with the same dedupe key, then records it once."""
    source = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    _offer(engine, source, "20.00")
    with Receiver() as receiver:
        add_rule(engine, RuleSpec(kind="price_drop", notify=receiver.url, percent=Decimal(10)))
        _offer(engine, source, "10.00")
        command = [sys.executable, "-m", "recordhound", "alerts", "send", "-s", "RECORDHOUND_ALERTS_CLAIM_SECONDS=0"]
        env = {**os.environ, "DATABASE_URL": database_url}
        killed = subprocess.run(command, env={**env, "RECORDHOUND_FAILPOINTS": "alerts.after_send=kill"},
                                cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert killed.returncode == -9, killed.stderr
        assert [d.status for d in _deliveries(engine)] == ["sending"]
        again = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert len(receiver.accepted) == 2
    assert receiver.headers[0]["X-Recordhound-Dedupe-Key"] == receiver.headers[1]["X-Recordhound-Dedupe-Key"]
    assert [(d.status, d.attempts) for d in _deliveries(engine)] == [("sent", 2)]


def test_the_admin_alerts_page_adds_lists_and_removes_rules(tmp_path: Path) -> None:
    """The page's forms (with their CSRF token) do what `recordhound alerts add|remove` do; a
    delivery's scraped title is shown as text."""
    from tests.integration.admin_server import admin_server, logged_in, token
    from tests.integration.review_env import review_env

    with review_env("embedded", tmp_path) as env:
        source = env.source()
        _offer(env.engine, source, "20.00")
        with admin_server(env, tmp_path) as base, Receiver() as receiver:
            session, csrf = logged_in(base)
            page = session.get(f"{base}/admin/alerts")
            assert page.status_code == 200 and "No alert rules yet" in page.text
            refused = session.post(f"{base}/admin/alerts/add", data={"kind": "price_drop", "notify": receiver.url})
            assert refused.status_code == 403  # no CSRF token
            bad = session.post(f"{base}/admin/alerts/add", data={
                "csrf_token": token(page.text), "kind": "price_drop", "notify": receiver.url})
            assert "needs --percent" in bad.text
            added = session.post(f"{base}/admin/alerts/add", data={
                "csrf_token": token(page.text), "kind": "price_drop", "value": "10", "source": "demo",
                "notify": receiver.url})
            assert "alert rule #1 added" in added.text and "price drop of 10" in added.text
            _offer(env.engine, source, "15.00")
            with env.engine.begin() as conn:  # a scraped title
                conn.exec_driver_sql("UPDATE releases SET title = '<script>alert(1)</script>'")
            run_alerts(env.engine, FAST)
            shown = session.get(f"{base}/admin/alerts").text
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "<script>alert(1)" not in shown
            assert 'data-delivery="1"' in shown and "sent" in shown
            removed = session.post(f"{base}/admin/alerts/remove", data={"csrf_token": token(shown), "rule_id": "1"})
            assert "alert rule #1 removed" in removed.text and "No alert rules yet" in removed.text
        assert len(receiver.accepted) == 1
        assert csrf


def test_a_real_crawl_that_fails_its_health_checks_alerts_once(engine: Engine, database_url: str,
                                                                tmp_path: Path) -> None:
    """The store pipeline records the crawl's last sample with the failed checks; the rule fires once."""
    from tests.services import run_crawl

    ensure_source(engine, "demo", "html", "http://127.0.0.1:9/")
    with Receiver() as receiver:
        add_rule(engine, RuleSpec(kind="crawl_failed", notify=receiver.url, source="demo"))
        done = run_crawl(tmp_path, database_url, "-a", "source=demo", "-a", "base_url=http://127.0.0.1:9/",
                         "-s", "RECORDHOUND_RETRY_MAX_ATTEMPTS=1")
        assert done.returncode == 1, done.stderr[-2000:]  # nothing listens on port 9
        run_alerts(engine, FAST)
        run_alerts(engine, FAST)
    assert len(receiver.accepted) == 1
    assert "fetched no page" in receiver.accepted[0]["message"]
