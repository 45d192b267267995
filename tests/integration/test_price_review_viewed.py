"""A decision on a held price change is made on the change the reviewer viewed: a crawl that rewrites the
pending entry meanwhile (another price seen) bumps its revision, and a decision that carries the revision
viewed is refused, or passed over in a bulk decision, instead of approving a change nobody saw. On both
queues (embedded + SQLite, Redis + PostgreSQL), through the queue, the `review` CLI and the web admin."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from recordhound.items import Release
from recordhound.review.queue import Decision, ReviewError
from tests.integration.admin_server import admin_server, logged_in
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_review_cli import recordhound
from tests.integration.test_review_queue import rows

D = Decimal


@pytest.fixture(params=["embedded", "redis"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env(request.param, tmp_path) as opened:
        yield opened


def seen(env: ReviewEnv, source: int, price: str, sku: str = "p1") -> None:
    """A (trusted) crawl sees the offer at this price."""
    env.writer(trusted=True).write(source, [Release(
        source="demo", url=f"http://127.0.0.1/release/{sku}", external_id=sku, title=f"Title {sku}",
        artists=["Artist"], price=D(price), currency="EUR")])


def viewed(env: ReviewEnv, *prices: tuple[str, str]) -> tuple[int, dict[str, dict[str, Any]]]:
    """Offers at their first price, then seen at the second (held); returns (source, listed entries by sku)."""
    source = env.source()
    for n, (old, _) in enumerate(prices, 1):
        seen(env, source, old, f"p{n}")
    for n, (_, new) in enumerate(prices, 1):
        seen(env, source, new, f"p{n}")
    return source, {e["external_id"]: e for e in env.queue.entries(kind="price")}


def offer_prices(env: ReviewEnv) -> dict[str, Decimal]:
    return dict(rows(env, "SELECT external_id, price FROM offers"))


def test_an_approval_of_a_price_change_rewritten_since_it_was_viewed_is_refused(env: ReviewEnv) -> None:
    source, listed = viewed(env, ("100.00", "120.00"))
    shown = listed["p1"]  # the reviewer is shown 100 → 120
    seen(env, source, "150.00")  # a crawl meanwhile: the same pending entry now asks 100 → 150
    with pytest.raises(ReviewError, match=re.escape(
            f"price change {shown['id']} changed since you viewed it: now 100.00 EUR → 150.00 EUR; view it again")):
        env.queue.decide(shown["id"], "approve", revision=shown["revision"])
    assert env.queue.jobs("approved") == [] and env.queue.entry(shown["id"])["status"] == "pending"
    assert env.worker().run()["completed"] == 0
    assert offer_prices(env) == {"p1": D("100.00")}  # 150 was never approved
    again = env.queue.entry(shown["id"])  # viewed again: approved as shown
    assert again["revision"] != shown["revision"]
    job = env.queue.decide(shown["id"], "approve", revision=again["revision"])
    assert job["change"]["new_price"] == "150.00"
    assert env.worker().run()["completed"] == 1
    assert offer_prices(env) == {"p1": D("150.00")}


def test_the_same_change_seen_again_keeps_its_revision_and_entities_need_none(env: ReviewEnv) -> None:
    source, listed = viewed(env, ("100.00", "120.00"))
    seen(env, source, "120.00")  # the same change again: what the reviewer saw still holds
    assert env.queue.entry(listed["p1"]["id"])["revision"] == listed["p1"]["revision"]
    env.queue.decide(listed["p1"]["id"], "skip", revision=listed["p1"]["revision"])
    env.writer().write(source, [Release(source="demo", url="http://127.0.0.1/release/n1", external_id="n1",
                                        title="New", artists=["Newcomer"])])
    (name,) = env.queue.entries(kind="artist")
    env.queue.decide(name["id"], "approve")  # entity decisions carry no revision
    assert env.worker().run()["completed"] == 2
    assert offer_prices(env) == {"p1": D("100.00"), "n1": None}


def test_a_bulk_decision_passes_over_a_rewritten_price_change_like_a_decided_one(env: ReviewEnv) -> None:
    source, listed = viewed(env, ("100.00", "120.00"), ("10.00", "20.00"))
    seen(env, source, "150.00", "p1")
    decisions = [Decision(int(e["id"]), "approve", revision=e["revision"]) for e in listed.values()]
    with pytest.raises(ReviewError, match="changed since you viewed it"):
        env.queue.decide_many(decisions)  # all or nothing
    assert env.queue.jobs("approved") == []
    jobs, passed = env.queue.decide_many(decisions, skip_decided=True)
    assert [j["entry_id"] for j in jobs] == [listed["p2"]["id"]] and passed == [listed["p1"]["id"]]
    assert env.worker().run()["completed"] == 1
    assert offer_prices(env) == {"p1": D("100.00"), "p2": D("20.00")}
    assert env.queue.entry(listed["p1"]["id"])["status"] == "pending"


def test_the_cli_refuses_a_viewed_revision_and_prints_the_change_it_decides(env: ReviewEnv, tmp_path: Path) -> None:
    source, listed = viewed(env, ("100.00", "120.00"))
    entry_id, revision = listed["p1"]["id"], listed["p1"]["revision"]
    shown = recordhound(env, tmp_path, "review", "list", "--type", "price")
    assert f"100.00 EUR → 120.00 EUR (+20.00 %) [pending, revision {revision}]" in shown.stdout, shown.stdout
    seen(env, source, "150.00")
    refused = recordhound(env, tmp_path, "review", "approve", str(entry_id), "--revision", str(revision))
    assert refused.returncode == 2 and (
        f"price change {entry_id} changed since you viewed it: now 100.00 EUR → 150.00 EUR; view it again"
        in refused.stderr), refused.stderr
    assert env.queue.jobs("approved") == []
    done = recordhound(env, tmp_path, "review", "approve", str(entry_id))  # no revision: the current change, printed
    assert done.returncode == 0, done.stderr
    assert f"approve price change {entry_id}: 100.00 EUR → 150.00 EUR (revision 2)" in done.stdout, done.stdout
    assert [j["change"]["new_price"] for j in env.queue.jobs("approved")] == ["150.00"]


def _row_form(page: str, entry_id: int) -> dict[str, str]:
    """The hidden fields of one row's decision form on the Price changes page, as a browser posts them."""
    row = re.search(rf'<tr data-entry="{entry_id}">(.*?)</tr>', page, re.S)
    assert row, page[-2000:]
    form = re.search(r"<form (.*?)</form>", row.group(1), re.S)
    assert form
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form.group(1)))


def test_the_admin_refuses_an_approval_of_a_change_rewritten_since_the_page_was_shown(
        env: ReviewEnv, tmp_path: Path) -> None:
    source, listed = viewed(env, ("10.00", "20.00"), ("10.00", "30.00"))
    with admin_server(env, tmp_path) as base:
        session, _ = logged_in(base)
        page = session.get(f"{base}/admin/prices").text
        first, second = _row_form(page, listed["p1"]["id"]), _row_form(page, listed["p2"]["id"])
        bulk = dict(re.findall(r'<input type="hidden" name="(revision_\d+)" value="(\d+)" form="bulk"', page))
        seen(env, source, "40.00", "p1")  # the page still shows 10 → 20
        refused = session.post(f"{base}/admin/prices/decide", data={**first, "action": "approve"})
        assert refused.status_code == 200 and 'id="error"' in refused.text, refused.text[-2000:]
        assert (f"price change {listed['p1']['id']} changed since you viewed it: now 10.00 EUR → 40.00 EUR; "
                "view it again") in refused.text
        assert re.search(rf'<tr data-entry="{listed["p1"]["id"]}">.*?40\.00', refused.text, re.S)
        assert env.queue.jobs("approved") == []
        selected = [listed["p1"]["id"], listed["p2"]["id"]]
        bulked = session.post(f"{base}/admin/prices/decide", data={
            **bulk, "selected": selected, "action": "approve", "csrf_token": second["csrf_token"]})
        assert bulked.status_code == 200 and 'id="error"' not in bulked.text, bulked.text[-2000:]
        assert f"changed since you viewed them, not decided: #{listed['p1']['id']}" in bulked.text
    assert [j["entry_id"] for j in env.queue.jobs("approved")] == [listed["p2"]["id"]]
    assert env.worker().run()["completed"] == 1
    assert offer_prices(env) == {"p1": D("10.00"), "p2": D("30.00")}
