"""The review queue under real crawls, a real apply worker process killed with SIGKILL, the next
price epoch, and a 10,000-row XLSX import killed mid-way (embedded + SQLite, Redis + PostgreSQL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import text

from recordhound.demo import feeds
from recordhound.demo.catalog import Catalog
from recordhound.demo.process import ShopProcess
from recordhound.text import name_key
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_review_queue import offer_skus, release, rows
from tests.services import run_crawl


@pytest.fixture(params=["embedded", "redis"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env(request.param, tmp_path) as opened:
        yield opened


def crawl(env: ReviewEnv, shop: ShopProcess, workdir: Path, *settings: str) -> None:
    args = ["-a", "source=demo", "-a", f"base_url={shop.url}"]
    for setting in (*env.settings(), *settings):
        args += ["-s", setting]
    result = run_crawl(workdir, env.database_url, *args, trusted=False)
    assert result.returncode == 0, result.stderr[-3000:]


def money(value: object) -> Decimal | None:
    """SQLite hands NUMERIC back as float from raw SQL; compare as cents."""
    return None if value is None else Decimal(str(value)).quantize(Decimal("0.01"))


def offer_names(offer: dict) -> set[tuple[str, str]]:  # type: ignore[type-arg]
    names = {("artist", name_key(a)) for a in offer["artists"]} | {("style", name_key(s)) for s in offer["styles"]}
    return names | {("label", name_key(offer["label"]))}


def test_crawl_matches_known_spellings_parks_unknown_names_and_releases_items_when_decided(
        env: ReviewEnv, tmp_path: Path) -> None:
    catalog = Catalog(40, seed=3)
    truth_offers = None
    seeded = {("artist", name_key(n)) for n in ("The Beatles", "Björk")} | {("style", "hip hop")}
    env.seed("artist", "The Beatles", "Björk")
    env.seed("style", "Hip Hop")
    label = catalog.products[0].label
    env.seed("label", label)
    seeded.add(("label", name_key(label)))
    with ShopProcess(40, seed=3) as shop:
        truth_offers = shop.truth()["offers"]
        crawl(env, shop, tmp_path)

    printed = {a for p in catalog.products for a in p.artists}
    beatles = {s for s in printed if name_key(s) == "the beatles"}
    assert len(beatles) == 3  # "The Beatles", "Beatles, The", "the beatles"
    synonyms = {s for (s,) in rows(env, "SELECT s.spelling FROM artist_synonyms s JOIN artists a "
                                        "ON a.id = s.artist_id WHERE a.name = 'The Beatles'")}
    assert synonyms == beatles
    assert {s for (s,) in rows(env, "SELECT spelling FROM style_synonyms")} >= {"Hip-Hop", "hip hop"}
    spellings = {s for (s,) in rows(env, "SELECT p.spelling FROM source_spellings p JOIN sources s "
                                         "ON s.id = p.source_id WHERE s.name = 'demo' AND p.kind = 'artist'")}
    assert spellings >= beatles | {"Bjork"}

    expected = Counter(n for o in truth_offers for n in offer_names(o) if n not in seeded)
    entries = env.queue.entries()
    assert len(entries) == len(expected)  # one entry per name, however many items mention it
    assert {(e["kind"], e["name_key"]): e["waiting"] for e in entries} == dict(expected)

    def should_be_stored(decided: set[tuple[str, str]]) -> set[str]:
        return {o["external_id"] for o in truth_offers if offer_names(o) <= seeded | decided}

    decided: set[tuple[str, str]] = set()
    assert offer_skus(env) == should_be_stored(decided)
    beatles_id = rows(env, "SELECT id FROM artists WHERE name = 'The Beatles'")[0][0]
    for n, entry in enumerate(entries):
        if n == 1 and entry["kind"] == "artist":
            env.queue.decide(entry["id"], "merge", into=beatles_id)
        else:
            env.queue.decide(entry["id"], "approve")
        before = offer_skus(env)
        assert env.worker().run()["completed"] == 1
        decided.add((entry["kind"], entry["name_key"]))
        assert offer_skus(env) == should_be_stored(decided), f"after deciding {entry['name']!r}"
        assert offer_skus(env) >= before
    assert offer_skus(env) == {o["external_id"] for o in truth_offers}
    assert env.queue.counts()["parked"] == 0
    for table in ("artists", "labels", "styles", "releases", "offers"):
        count, top = rows(env, f"SELECT count(*), max(id) FROM {table}")[0]
        assert top == count, f"{table}: ids are not 1..{count}"


def test_apply_worker_killed_between_write_and_ack_applies_the_decision_once(env: ReviewEnv, tmp_path: Path) -> None:
    source = env.source()
    env.writer().write(source, [release("k1", ["Killed Artist"]), release("k2", ["Killed Artist", "Other"])])
    entry = next(e for e in env.queue.entries() if e["name"] == "Killed Artist")
    job = env.queue.decide(entry["id"], "approve")
    command = [sys.executable, "-m", "recordhound", "apply"]
    for setting in env.settings():
        command += ["-s", setting]
    process_env = {**os.environ, "DATABASE_URL": env.database_url, "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}
    log = open(tmp_path / "apply.log", "w")  # noqa: SIM115 - closed below
    worker = subprocess.Popen([*command, "-s", "RECORDHOUND_APPLY_ACK_DELAY_SECONDS=120",
                               "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=2"],
                              cwd=tmp_path, env=process_env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while not rows(env, "SELECT id FROM artists WHERE name = 'Killed Artist'"):
            assert time.monotonic() < deadline, (tmp_path / "apply.log").read_text()
            assert worker.poll() is None, (tmp_path / "apply.log").read_text()
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)  # the entity is written; the job is not acked
        worker.wait(30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        log.close()
    assert [j["id"] for j in env.queue.jobs("processing")] == [job["id"]]
    assert env.queue.jobs("completed") == [] and offer_skus(env) == set()
    time.sleep(2.2)  # the dead worker's lease runs out
    again = subprocess.run(command, cwd=tmp_path, env=process_env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "applied 1 decisions, 0 failed" in again.stdout
    assert rows(env, "SELECT name FROM artists") == [("Killed Artist",)]
    assert rows(env, "SELECT spelling FROM artist_synonyms") == [("Killed Artist",)]
    [done] = env.queue.jobs("completed")
    assert done["id"] == job["id"] and done["attempts"] == 2 and done["result"]["items"] == {"stored": 1, "parked": 1}
    assert offer_skus(env) == {"k1"} and env.queue.jobs("processing") == []


def test_next_epoch_writes_small_price_changes_and_holds_large_ones(env: ReviewEnv, tmp_path: Path) -> None:
    with ShopProcess(120, seed=5, epoch=0) as shop:
        crawl(env, shop, tmp_path, "RECORDHOUND_TRUST_NEW_ENTITIES=true")
    with ShopProcess(120, seed=5, epoch=1) as shop:
        changed = shop.truth()["changed_offers"]
        crawl(env, shop, tmp_path, "RECORDHOUND_LAST_SEEN_RESOLUTION_SECONDS=1")
    small = [c for c in changed if abs(c["change_percent"]) <= 5]
    large = [c for c in changed if abs(c["change_percent"]) > 5]
    assert small and large
    prices = {sku: money(price) for sku, price in rows(env, "SELECT external_id, price FROM offers")}
    history = {sku: (money(old), money(new)) for sku, old, new in rows(
        env, "SELECT o.external_id, h.old_price, h.new_price FROM offer_history h JOIN offers o ON o.id = h.offer_id")}
    for change in small:
        assert prices[change["external_id"]] == Decimal(change["new_price"])
        assert history[change["external_id"]] == (Decimal(change["old_price"]), Decimal(change["new_price"]))
    for change in large:
        assert prices[change["external_id"]] == Decimal(change["old_price"])
        assert change["external_id"] not in history
    held = {e["external_id"]: e for e in env.queue.entries(kind="price")}
    assert set(held) == {c["external_id"] for c in large}
    for change in large:
        assert held[change["external_id"]]["change_pct"] == pytest.approx(change["change_percent"], abs=0.01)  # signed
    approve, reject = large[0], large[1:]
    env.queue.decide(held[approve["external_id"]]["id"], "approve")
    for change in reject:
        env.queue.decide(held[change["external_id"]]["id"], "skip")
    assert env.worker().run()["completed"] == len(large)
    prices = {sku: money(price) for sku, price in rows(env, "SELECT external_id, price FROM offers")}
    assert prices[approve["external_id"]] == Decimal(approve["new_price"])
    assert all(prices[c["external_id"]] == Decimal(c["old_price"]) for c in reject)
    assert rows(env, "SELECT count(*) FROM offer_history")[0][0] == len(small) + 1


def write_xlsx(path: Path, catalog: Catalog, count: int, broken: set[int]) -> None:
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("catalog")
    sheet.append(feeds.COLUMNS)
    for line, row in enumerate(feeds.rows(catalog), start=1):
        if line > count:
            break
        values = list(row)
        values[0] = f"{values[0]}-{line}"  # one position per row
        if line in broken:
            values[1] = ""  # no title: rejected with its line number
        sheet.append(values)
    book.save(path)


def test_xlsx_import_killed_midway_resumes_at_the_next_line(env: ReviewEnv, tmp_path: Path) -> None:
    catalog = Catalog(9700, seed=11)
    assert len(catalog.products) >= 10_000
    feed = tmp_path / "catalog.xlsx"
    broken = {17, 4_600, 9_999}
    write_xlsx(feed, catalog, 10_000, broken)
    env.seed("artist", *catalog.artist_names[: len(catalog.artist_names) // 2])
    env.seed("label", *sorted({p.label for p in catalog.products}))
    env.seed("style", *catalog.style_names)
    command = [sys.executable, "-m", "recordhound", "import", "demo_feed", "--file", str(feed), "--batch-size", "250"]
    for setting in env.settings():
        command += ["-s", setting]
    process_env = {**os.environ, "DATABASE_URL": env.database_url, "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}

    def meta() -> dict:  # type: ignore[type-arg]
        found = rows(env, "SELECT metadata FROM sources WHERE name = 'demo_feed'")
        value = found[0][0] if found else {}
        return value if isinstance(value, dict) else __import__("json").loads(value)

    log = open(tmp_path / "import.log", "w")  # noqa: SIM115 - closed below
    importer = subprocess.Popen(command, cwd=tmp_path, env=process_env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 240
        while (meta().get("last_parsed_line") or 0) < 3_000:
            assert time.monotonic() < deadline, (tmp_path / "import.log").read_text()[-3000:]
            assert importer.poll() is None, (tmp_path / "import.log").read_text()[-3000:]
            time.sleep(0.05)
        importer.send_signal(signal.SIGKILL)
        importer.wait(30)
    finally:
        if importer.poll() is None:
            importer.kill()
            importer.wait()
        log.close()
    killed = meta()
    assert killed["status"] == "in_progress" and killed["total_lines"] == 10_000
    stopped_at = killed["last_parsed_line"]
    assert 3_000 <= stopped_at < 10_000

    again = subprocess.run(command, cwd=tmp_path, env=process_env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"Resuming {feed} at line {stopped_at + 1} of 10000" in again.stderr
    assert f"lines {stopped_at + 1}-10000 of 10000" in again.stdout
    done = meta()
    assert done["status"] == "completed" and done["last_parsed_line"] == 10_000 and done["parsed_at"]
    assert {e["line"] for e in done["line_errors"]} == broken

    source_id = rows(env, "SELECT id FROM sources WHERE name = 'demo_feed'")[0][0]
    stored = {sku for (sku,) in rows(env, "SELECT external_id FROM offers WHERE source_id = :s", s=source_id)}
    parked = set(env.queue.store.run(lambda txn: list(txn.all("review:parked"))))
    rejected = {r["key"]: r for r in env.queue.rejected()}
    positions = {f"{source_id}:{sku}" for sku in stored} | parked | set(rejected)
    assert stored and parked
    assert len(stored) + len(parked) + len(rejected) == 10_000  # each position exactly once
    assert len(positions) == 10_000
    assert {rejected[f"{source_id}:line:{n}"]["parsed_line"] for n in broken} == broken
    some_parked = env.queue.store.run(lambda txn: txn.get("review:parked", sorted(parked)[0]))
    assert some_parked["parsed_line"] == some_parked["item"]["line"] and some_parked["source_name"] == "demo_feed", some_parked
    assert all("title" in rejected[f"{source_id}:line:{n}"]["reason"] for n in broken)
    with env.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM offer_history")).scalar() == 0
