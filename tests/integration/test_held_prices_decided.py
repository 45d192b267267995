"""Held price changes once decided, on SQLite + the embedded queue and PostgreSQL + the Redis queue:
a crawl never rewrites a decided entry (queued, failed, rejected: it opens a new one), the apply
writes the change the reviewer approved, and a rejection matches only the same whole change."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import text

from recordhound.items import Release
from recordhound.review.queue import ReviewError
from tests.integration.review_env import ReviewEnv, open_env

D = Decimal


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> Iterator[ReviewEnv]:
    with open_env(database_url, tmp_path) as opened:
        yield opened


def seen(env: ReviewEnv, source: int, price: str, currency: str = "EUR", sku: str = "p1") -> dict[str, int]:
    """A crawl sees the offer at this price; returns the writer's counts."""
    item = Release(source="demo", url=f"http://127.0.0.1/release/{sku}", external_id=sku, title=f"Title {sku}",
                   artists=["Artist"], price=D(price), currency=currency)
    return dict(env.writer(trusted=True).write(source, [item]).counts)


def offers(env: ReviewEnv) -> list[tuple[object, ...]]:
    return _rows(env, "SELECT external_id, price, currency FROM offers ORDER BY id")


def history(env: ReviewEnv) -> list[tuple[object, ...]]:
    return _rows(env, "SELECT old_price, old_currency, new_price, new_currency FROM offer_history ORDER BY id")


def change(env: ReviewEnv, entry_id: int) -> tuple[str, str | None, str | None, str | None, str | None]:
    """(status, old price, old currency, new price, new currency) of an entry."""
    e = env.queue.entry(entry_id)
    return e["status"], e["old_price"], e["old_currency"], e["new_price"], e["new_currency"]


def listed(env: ReviewEnv) -> list[tuple[str, str | None, str | None, str | None, str | None]]:
    """What a reviewer is asked: the listed price entries, as ``change``."""
    return [change(env, int(e["id"])) for e in env.queue.entries(kind="price")]


def _rows(env: ReviewEnv, sql: str) -> list[tuple[object, ...]]:
    with env.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql)).all()]


def held_once(env: ReviewEnv) -> tuple[int, int]:
    """Offer p1 at 100 EUR, then seen at 120 EUR (+20 %: held). Returns (source, entry id)."""
    source = env.source()
    seen(env, source, "100.00")
    assert seen(env, source, "120.00").get("prices_held") == 1
    (entry,) = env.queue.entries(kind="price")
    return source, int(entry["id"])


def test_a_crawl_during_a_queued_approval_opens_a_new_entry_and_the_approved_price_is_applied(
        env: ReviewEnv) -> None:
    source, first = held_once(env)
    job = env.queue.decide(first, "approve")  # 100 → 120 approved, not yet applied
    approved = {"old_price": "100.00", "old_currency": "EUR", "new_price": "120.00", "new_currency": "EUR"}
    assert job["change"] == approved  # the decision records what was approved
    assert seen(env, source, "150.00").get("prices_held") == 1
    assert change(env, first) == ("queued", "100.00", "EUR", "120.00", "EUR")  # not rewritten
    (newer,) = env.queue.entries(kind="price")
    assert int(newer["id"]) != first
    assert listed(env) == [("pending", "100.00", "EUR", "150.00", "EUR")]
    assert dict(env.worker().run()) == {"completed": 1}
    assert offers(env) == [("p1", D("120.00"), "EUR")]  # what was approved, not 150
    assert history(env) == [(D("100.00"), "EUR", D("120.00"), "EUR")]
    assert change(env, first) == ("approved", "100.00", "EUR", "120.00", "EUR")
    assert [(j["change"], j["result"]["status"]) for j in env.queue.jobs("completed")] == [(approved, "approved")]
    assert change(env, int(newer["id"])) == ("pending", "100.00", "EUR", "150.00", "EUR")
    # the next crawl sees 150 again: the pending entry (never decided) now asks 120 → 150
    assert seen(env, source, "150.00").get("prices_held") == 1
    assert [int(e["id"]) for e in env.queue.entries(kind="price")] == [int(newer["id"])]
    assert listed(env) == [("pending", "120.00", "EUR", "150.00", "EUR")]
    env.queue.decide(int(newer["id"]), "approve")
    assert dict(env.worker().run()) == {"completed": 1}
    assert offers(env) == [("p1", D("150.00"), "EUR")]
    assert history(env) == [(D("100.00"), "EUR", D("120.00"), "EUR"), (D("120.00"), "EUR", D("150.00"), "EUR")]


def test_a_crawl_during_a_queued_rejection_opens_a_new_entry(env: ReviewEnv) -> None:
    source, first = held_once(env)
    env.queue.decide(first, "skip")
    assert seen(env, source, "150.00").get("prices_held") == 1
    assert change(env, first) == ("queued", "100.00", "EUR", "120.00", "EUR")
    assert listed(env) == [("pending", "100.00", "EUR", "150.00", "EUR")]
    assert dict(env.worker().run()) == {"completed": 1}
    assert offers(env) == [("p1", D("100.00"), "EUR")]
    assert history(env) == []
    assert change(env, first) == ("rejected", "100.00", "EUR", "120.00", "EUR")
    assert listed(env) == [("pending", "100.00", "EUR", "150.00", "EUR")]


def test_the_queued_change_seen_again_is_not_asked_twice(env: ReviewEnv) -> None:
    source, first = held_once(env)
    env.queue.decide(first, "approve")
    assert seen(env, source, "120.00").get("prices_held") == 1  # still waiting: for its apply
    assert env.queue.entries(kind="price") == []
    assert change(env, first) == ("queued", "100.00", "EUR", "120.00", "EUR")
    assert dict(env.worker().run()) == {"completed": 1}
    assert offers(env) == [("p1", D("120.00"), "EUR")]
    assert history(env) == [(D("100.00"), "EUR", D("120.00"), "EUR")]


def test_a_failed_approval_is_not_rewritten_and_its_retry_applies_what_was_approved(env: ReviewEnv) -> None:
    source, first = held_once(env)
    (job,) = [env.queue.decide(first, "approve")]
    leased = env.queue.lease("worker-a", 30)
    assert leased is not None and leased["id"] == job["id"]
    env.queue.fail(leased, "OperationalError: the database went away")
    assert seen(env, source, "150.00").get("prices_held") == 1
    assert change(env, first) == ("failed", "100.00", "EUR", "120.00", "EUR")
    assert sorted(listed(env)) == [("failed", "100.00", "EUR", "120.00", "EUR"),
                                   ("pending", "100.00", "EUR", "150.00", "EUR")]
    env.queue.retry(job["id"])
    assert dict(env.worker().run()) == {"completed": 1}
    assert offers(env) == [("p1", D("120.00"), "EUR")]
    assert history(env) == [(D("100.00"), "EUR", D("120.00"), "EUR")]
    assert change(env, first) == ("approved", "100.00", "EUR", "120.00", "EUR")
    assert listed(env) == [("pending", "100.00", "EUR", "150.00", "EUR")]


def rejected_once(env: ReviewEnv) -> tuple[int, int]:
    """100 EUR → 120 EUR held and rejected (applied). Returns (source, entry id)."""
    source, first = held_once(env)
    env.queue.decide(first, "skip")
    assert dict(env.worker().run()) == {"completed": 1}
    assert change(env, first) == ("rejected", "100.00", "EUR", "120.00", "EUR")
    return source, first


def test_a_rejected_change_seen_again_is_not_asked_again(env: ReviewEnv) -> None:
    source, _ = rejected_once(env)
    assert seen(env, source, "120.00").get("prices_held", 0) == 0
    assert env.queue.entries(kind="price") == []
    assert offers(env) == [("p1", D("100.00"), "EUR")]


def test_a_rejection_does_not_cover_the_same_amount_in_another_currency(env: ReviewEnv) -> None:
    source, first = rejected_once(env)
    assert seen(env, source, "120.00", "USD").get("prices_held") == 1
    assert listed(env) == [("pending", "100.00", "EUR", "120.00", "USD")]
    assert change(env, first) == ("rejected", "100.00", "EUR", "120.00", "EUR")
    assert offers(env) == [("p1", D("100.00"), "EUR")]
    (entry,) = env.queue.entries(kind="price")
    assert entry["name"] == "offer p1: 100.00 EUR → 120.00 USD"  # the reviewer sees the currency change
    env.queue.decide(int(entry["id"]), "approve")
    assert dict(env.worker().run()) == {"completed": 1}
    assert offers(env) == [("p1", D("120.00"), "USD")]
    assert history(env) == [(D("100.00"), "EUR", D("120.00"), "USD")]


def test_a_rejection_does_not_cover_the_same_new_price_from_another_old_price(env: ReviewEnv) -> None:
    source, first = rejected_once(env)
    counts = seen(env, source, "103.00")  # +3 %: written
    assert counts.get("price_changes") == 1 and counts.get("prices_held", 0) == 0
    assert seen(env, source, "120.00").get("prices_held") == 1  # 103 → 120 was never asked
    assert listed(env) == [("pending", "103.00", "EUR", "120.00", "EUR")]
    assert change(env, first) == ("rejected", "100.00", "EUR", "120.00", "EUR")
    assert offers(env) == [("p1", D("103.00"), "EUR")]
    assert history(env) == [(D("100.00"), "EUR", D("103.00"), "EUR")]


@pytest.mark.parametrize("shown, stored", [("100.00", "100.00"), ("102.00", "102.00")], ids=["back", "drifted"])
def test_a_pending_change_is_withdrawn_when_the_shop_shows_the_stored_price_again(
        env: ReviewEnv, shown: str, stored: str) -> None:
    """100 → 120 waits; the next crawl sees 100 again (back), or 102, under the threshold and written
    (drifted): the pending 100 → 120 is stale, withdrawn (superseded, no longer listed, and no longer
    decidable). Before, approving it wrote 120 while the shop showed 100 (the next crawl then held
    120 → 100)."""
    source, first = held_once(env)
    counts = seen(env, source, shown)
    assert (counts.get("prices_held", 0), counts.get("prices_withdrawn")) == (0, 1), counts
    assert change(env, first) == ("superseded", "100.00", "EUR", "120.00", "EUR")
    assert "withdrawn" in env.queue.entry(first)["reason"]
    assert listed(env) == []
    with pytest.raises(ReviewError):
        env.queue.decide(first, "approve")
    assert offers(env) == [("p1", D(stored), "EUR")]
    assert seen(env, source, "130.00")["prices_held"] == 1  # a new change is asked as a new entry
    assert listed(env) == [("pending", stored, "EUR", "130.00", "EUR")]


def test_a_decided_change_is_not_withdrawn(env: ReviewEnv) -> None:
    """Approved (queued) before the crawl saw 100 again: the decision stands and is applied."""
    source, first = held_once(env)
    env.queue.decide(first, "approve")
    assert seen(env, source, "100.00").get("prices_withdrawn", 0) == 0
    assert change(env, first)[0] == "queued"
    assert env.worker().run()["completed"] == 1
    assert offers(env) == [("p1", D("120.00"), "EUR")]


def test_the_apply_s_release_of_an_older_version_withdraws_nothing(env: ReviewEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """An item parked at the stored 100 (a new artist spelling) is released by the apply; right after
    the release's commit a crawl holds 100 → 120 (the name decided by then). The release's view of the
    price is the older one: it must not withdraw the newer pending change."""
    from recordhound import failpoints
    from recordhound.catalog import writer as writer_module

    source = env.source()
    seen(env, source, "100.00")
    env.writer().write(source, [Release(source="demo", url="http://127.0.0.1/release/p1", external_id="p1",
                                        title="Title p1", artists=["Newartist"], price=D("100.00"), currency="EUR")])
    (name,) = env.queue.entries()
    env.queue.decide(name["id"], "approve")
    hit, crawled = failpoints.hit, []

    def crawl_after_the_release_commit(point: str, *args: object) -> None:
        if point == "store.after_commit" and not crawled:
            crawled.append({})  # once: the crawl's own commit passes here too
            crawled[0] = seen(env, source, "120.00")
        hit(point, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(writer_module.failpoints, "hit", crawl_after_the_release_commit)
    assert env.worker().run()["completed"] == 1
    assert crawled and crawled[0]["prices_held"] == 1
    assert listed(env) == [("pending", "100.00", "EUR", "120.00", "EUR")]
