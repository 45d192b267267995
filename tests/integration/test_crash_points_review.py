"""Crash points outside the crawler: the apply worker between its write and its ack, and a file
import between a batch's commit and the ``last_parsed_line`` update, an import and the apply worker
around a held price change. Killed there, restarted: every item lands once, a held change is held
once and written once, IDs stay consecutive (embedded + SQLite, and Redis + PostgreSQL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from recordhound.demo import feeds
from recordhound.demo.catalog import Catalog
from recordhound.demo.truth import build_truth
from tests.integration.dbcheck import ProductDb
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_review_queue import offer_skus, release, rows
from tests.integration.truthcheck import assert_ids_consecutive, assert_product_db_matches


@pytest.fixture(params=["embedded", "redis"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env(request.param, tmp_path) as opened:
        yield opened


def _run(env: ReviewEnv, tmp_path: Path, *args: str, failpoints: str = "") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "recordhound", *args]
    for setting in env.settings():
        command += ["-s", setting]
    process_env = {**os.environ, "DATABASE_URL": env.database_url, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
                   "RECORDHOUND_FAILPOINTS": failpoints}
    return subprocess.run(command, cwd=tmp_path, env=process_env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("point", ["apply.after_write", "apply.after_settle"])
@pytest.mark.parametrize("batch, completed", [(1, 2), (3, 3)])  # one job per write; three per write (the bulk path)
def test_apply_worker_killed_after_its_write_redoes_the_job_once(env: ReviewEnv, tmp_path: Path, batch: int,
                                                                 completed: int, point: str) -> None:
    """The demo catalogue's feed imported untrusted: every item parked on names nobody knew; every
    name approved. The apply worker dies after a write (its jobs committed, not acked); run again
    once its lease is out, it redoes those jobs once: the product DB matches the catalogue's truth
    field by field, IDs consecutive and sequences at max(id)."""
    catalog = Catalog(40, seed=9)
    truth = build_truth(catalog)
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(feeds.to_csv(catalog))
    parked = _run(env, tmp_path, "import", "demo_feed", "--file", str(feed))
    assert parked.returncode == 0, parked.stderr[-3000:]
    assert offer_skus(env) == set() and env.queue.counts()["parked"] == len(truth["offers"])
    entries = env.queue.entries()
    for entry in entries:
        env.queue.decide(entry["id"], "approve")
    killed = _run(env, tmp_path, "apply", "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=1",
                  "-s", f"RECORDHOUND_REVIEW_BATCH_SIZE={batch}",
                  failpoints=f"{point}=kill@{3 if batch == 1 else 2}")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert len(env.queue.jobs("completed")) == completed  # the next write was committed, not acked
    time.sleep(1.2)  # the dead worker's lease runs out
    again = _run(env, tmp_path, "apply", "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(env.queue.jobs("completed")) == len(entries) and env.queue.jobs("failed") == []
    assert env.queue.counts()["parked"] == 0
    assert_product_db_matches(env.database_url, truth)  # each entity and item once; IDs and sequences


def test_import_killed_between_commit_and_progress_resumes_without_doubles(env: ReviewEnv, tmp_path: Path) -> None:
    catalog = Catalog(200, seed=12)
    truth = build_truth(catalog)
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(feeds.to_csv(catalog))
    env.seed("artist", *sorted({a for o in truth["offers"] for a in o["artists"]}))
    env.seed("label", *sorted({o["label"] for o in truth["offers"]}))
    env.seed("style", *sorted({s for o in truth["offers"] for s in o["styles"]}))
    args = ("import", "demo_feed", "--file", str(feed), "--batch-size", "40")
    killed = _run(env, tmp_path, *args, failpoints="import.after_commit=kill@2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert 0 < len(offer_skus(env)) < len(truth["offers"])
    again = _run(env, tmp_path, *args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Resuming" in again.stderr  # at the first line of the batch whose progress was not recorded
    assert_product_db_matches(env.database_url, truth)


@pytest.mark.parametrize("apply_killed_at", ["store.before_commit", "store.after_commit"])
def test_kills_around_unparking_released_and_recrawled_items_lose_nothing(env: ReviewEnv, tmp_path: Path,
                                                                          apply_killed_at: str) -> None:
    """Items parked on names nobody knew; every name approved. The apply worker dies in the write of
    the items it releases (before its commit: nothing stored; after it: stored, still parked); the
    source is read again and dies after its batch unparked the items, before its commit; both run
    again: every item is stored once, nothing stays parked, ids and sequences consecutive."""
    catalog = Catalog(40, seed=5)
    truth = build_truth(catalog)
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(feeds.to_csv(catalog))
    args = ("import", "demo_feed", "--file", str(feed), "--batch-size", "500")
    parked = _run(env, tmp_path, *args)
    assert parked.returncode == 0, parked.stderr[-3000:]
    assert offer_skus(env) == set() and env.queue.counts()["parked"] == len(truth["offers"])
    for entry in env.queue.entries():
        env.queue.decide(entry["id"], "approve")
    apply = ("apply", "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=1")
    killed = _run(env, tmp_path, *apply, failpoints=f"{apply_killed_at}=kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert env.queue.counts()["parked"] == len(truth["offers"])  # released items are unparked after the commit
    again = (*args, "--restart")
    killed = _run(env, tmp_path, *again, failpoints="store.before_commit=kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert env.queue.counts()["parked"] == 0  # unparked in the transaction that died
    assert _run(env, tmp_path, *again).returncode == 0
    time.sleep(1.2)  # the dead apply worker's lease runs out
    applied = _run(env, tmp_path, *apply)
    assert applied.returncode == 0, applied.stderr[-3000:]
    assert env.queue.jobs("failed") == [] and env.queue.counts()["parked"] == 0
    assert_product_db_matches(env.database_url, truth)
    db = ProductDb(env.database_url)
    assert_ids_consecutive(db)
    db.close()


def test_a_kill_before_a_commit_leaves_no_sequence_ahead_of_an_empty_table(env: ReviewEnv, tmp_path: Path) -> None:
    """The apply worker dies releasing an item (its rows inserted and the sequences moved, not
    committed); before its job is done again, a crawl brings that item back refused by the schema (a
    title too long): the item never reaches the product DB, so no insert moves the releases' and
    offers' sequences back. The next process that opens the database does: every sequence at its
    table's ``max(id)``, unused on an empty table."""
    source = env.source()
    env.seed("artist", "Known Artist")
    env.writer().write(source, [release("k1", ["Known Artist", "New Artist"])])
    (entry,) = env.queue.entries()
    env.queue.decide(entry["id"], "approve")
    apply = ("apply", "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=1")
    killed = _run(env, tmp_path, *apply, failpoints="store.before_commit=kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    refused = env.writer().write(source, [release("k1", ["Known Artist", "New Artist"], title="T" * 400)])
    assert refused.counts["invalid"] == 1, dict(refused.counts)
    time.sleep(1.2)  # the dead apply worker's lease runs out
    applied = _run(env, tmp_path, *apply)
    assert applied.returncode == 0, applied.stderr[-3000:]
    assert env.queue.jobs("failed") == [] and offer_skus(env) == set()
    assert sorted(name for (name,) in rows(env, "SELECT name FROM artists")) == ["Known Artist", "New Artist"]
    assert_ids_consecutive(env.database_url)


FEED_HEAD = "sku,title,artists,label,catalog_number,year,styles,price,in_stock\n"
FEED_ROWS = {  # sku → (row before, row after: P-1 doubles its price, P-2 keeps it, P-3 falls by 1 %)
    "P-1": ("P-1,First,Held Artist,Held Label,HL-1,2001,Dub,10.00 EUR,yes", "P-1,First,Held Artist,Held Label,HL-1,2001,Dub,20.00 EUR,yes"),
    "P-2": ("P-2,Second,Held Artist,Held Label,HL-2,2002,Dub,30.00 EUR,yes", "P-2,Second,Held Artist,Held Label,HL-2,2002,Dub,30.00 EUR,yes"),
    "P-3": ("P-3,Third,Held Artist,Held Label,HL-3,2003,Dub,50.00 EUR,yes", "P-3,Third,Held Artist,Held Label,HL-3,2003,Dub,49.50 EUR,yes"),
}


@pytest.mark.parametrize("import_killed_at, apply_killed_at", [("store.before_commit", "apply.after_write"),
                                                                ("store.after_commit", "apply.after_settle")])
def test_kills_around_a_held_price_change_hold_it_once_and_apply_it_once(
        env: ReviewEnv, tmp_path: Path, import_killed_at: str, apply_killed_at: str) -> None:
    """A feed read again doubles one offer's price (held for review: the threshold is 5 %) and lowers
    another's by 1 % (written). The import dies around its batch's commit, the entry already in the
    review queue (a store of its own); read again, it holds the change once. Approved, the apply worker
    dies around its write; run again, the price is written once, with one history row."""
    feed = tmp_path / "prices.csv"
    trusted = ("-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true")
    args = ("import", "demo_feed", "--file", str(feed), "--batch-size", "10", *trusted)
    feed.write_text(FEED_HEAD + "\n".join(before for before, _ in FEED_ROWS.values()) + "\n")
    assert (first := _run(env, tmp_path, *args)).returncode == 0, first.stderr[-3000:]
    history_before = rows(env, "SELECT count(*) FROM offer_history")[0][0]
    feed.write_text(FEED_HEAD + "\n".join(after for _, after in FEED_ROWS.values()) + "\n")
    killed = _run(env, tmp_path, *args, "--restart", failpoints=f"{import_killed_at}=kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    again = _run(env, tmp_path, *args, "--restart")
    assert again.returncode == 0, again.stderr[-3000:]
    prices = dict(rows(env, "SELECT external_id, price FROM offers"))
    assert prices == {"P-1": Decimal("10.00"), "P-2": Decimal("30.00"), "P-3": Decimal("49.50")}
    held = [(e["status"], e["old_price"], e["new_price"]) for e in env.queue.entries(kind="price")]
    assert held == [("pending", "10.00", "20.00")]
    assert rows(env, "SELECT count(*) FROM offer_history")[0][0] == history_before + 1  # P-3's change
    (entry,) = env.queue.entries(kind="price")
    env.queue.decide(int(entry["id"]), "approve")
    apply = ("apply", "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=1")
    killed = _run(env, tmp_path, *apply, failpoints=f"{apply_killed_at}=kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    time.sleep(1.2)  # the dead worker's lease runs out
    applied = _run(env, tmp_path, *apply)
    assert applied.returncode == 0, applied.stderr[-3000:]
    assert len(env.queue.jobs("completed")) == 1 and env.queue.jobs("failed") == []
    assert dict(rows(env, "SELECT external_id, price FROM offers"))["P-1"] == Decimal("20.00")
    changes = rows(env, "SELECT o.external_id, h.old_price, h.new_price FROM offer_history h "
                        "JOIN offers o ON o.id = h.offer_id WHERE h.old_price IS NOT NULL ORDER BY h.id")
    assert changes == [("P-3", Decimal("50.00"), Decimal("49.50")), ("P-1", Decimal("10.00"), Decimal("20.00"))]
    assert rows(env, "SELECT count(*) FROM offer_history")[0][0] == history_before + 2
    assert_ids_consecutive(env.database_url)
