"""Record a crawl of the live demo shop into a cassette, stop the shop, replay it offline."""

from __future__ import annotations

import json
from pathlib import Path

from recordhound.demo.process import ShopProcess
from tests.integration.dbcheck import ProductDb
from tests.services import run_crawl


def _offers(database_url: str) -> set[tuple[object, ...]]:
    """Offers with their release's natural key (IDs depend on the order batches were written)."""
    db = ProductDb(database_url)
    try:
        return {tuple(row) for row in db.rows(
            "SELECT o.external_id, o.price, o.currency, o.in_stock, r.natural_key, r.title "
            "FROM offers o JOIN releases r ON r.id = o.release_id")}
    finally:
        db.close()


def _pages(stats: dict[str, int]) -> int:
    """Responses other than robots.txt: recording reads it once outside the downloader (the
    frontier's Crawl-delay read), replaying without the shop gets it through Scrapy's middleware."""
    return stats["response_received_count"] - stats.get("robotstxt/response_count", 0)


def test_record_then_replay_without_the_shop_gives_the_same_items(tmp_path: Path) -> None:
    cassette = tmp_path / "demo.json"
    with ShopProcess(60, seed=4) as shop:
        url = shop.url
        (tmp_path / "rec").mkdir()
        recorded = run_crawl(tmp_path / "rec", f"sqlite:///{tmp_path / 'live.sqlite3'}", "-a", "source=demo",
                             "-a", f"base_url={url}", "-s", f"RECORDHOUND_CASSETTE={cassette}",
                             "-s", "RECORDHOUND_CASSETTE_MODE=record")
        assert recorded.returncode == 0, recorded.stderr[-2000:]
    interactions = json.loads(cassette.read_text())["http_interactions"]
    assert {"request", "response", "recorded_at"} <= set(interactions[0])
    (tmp_path / "play").mkdir()
    replayed = run_crawl(tmp_path / "play", f"sqlite:///{tmp_path / 'offline.sqlite3'}", "-a", "source=demo",
                         "-a", f"base_url={url}", "-s", f"RECORDHOUND_CASSETTE={cassette}")
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    live = _offers(f"sqlite:///{tmp_path / 'live.sqlite3'}")
    assert len(live) == 62 and _offers(f"sqlite:///{tmp_path / 'offline.sqlite3'}") == live
    assert _pages(replayed.stats) == _pages(recorded.stats)
    assert replayed.stats.get("recordhound/errors/cassette_missing", 0) == 0

    missing = next(i for i in interactions if "/release/0000" in i["request"]["uri"])
    interactions.remove(missing)
    cassette.write_text(json.dumps({"http_interactions": interactions}))
    (tmp_path / "gap").mkdir()
    gap = run_crawl(tmp_path / "gap", f"sqlite:///{tmp_path / 'gap.sqlite3'}", "-a", "source=demo",
                    "-a", f"base_url={url}", "-s", f"RECORDHOUND_CASSETTE={cassette}")
    assert gap.stats["recordhound/errors/cassette_missing"] == 1
    assert f"GET {missing['request']['uri']} is not in cassette {cassette}" in gap.stderr


CASSETTES = Path(__file__).parents[1] / "cassettes"


def test_committed_cassette_checks_spider_and_pipelines_offline(tmp_path: Path) -> None:
    """tests/cassettes/demo_20.json: a 20-release demo crawl, replayed against http://demo.test/."""
    from recordhound.demo.catalog import Catalog
    from recordhound.demo.truth import build_truth

    truth = build_truth(Catalog(20, seed=1))
    url = f"sqlite:///{tmp_path / 'p.sqlite3'}"
    done = run_crawl(tmp_path, url, "-a", "source=demo", "-a", "base_url=http://demo.test/",
                     "-s", f"RECORDHOUND_CASSETTE={CASSETTES / 'demo_20.json'}")
    assert done.returncode == 0, done.stderr[-2000:]
    db = ProductDb(url)
    counts = db.counts()
    assert {k: counts[k] for k in ("releases", "offers", "artists", "labels", "styles")} == {
        k: truth["counts"][k] for k in ("releases", "offers", "artists", "labels", "styles")}
    stored = db.offers()
    assert all(stored[o["external_id"]]["price"] == o["price"] for o in truth["offers"])
    db.close()


def test_profile_test_command_reads_a_cassette(tmp_path: Path) -> None:
    import subprocess
    import sys

    cassette = str(CASSETTES / "demo_20.json")
    run = subprocess.run([sys.executable, "-m", "recordhound", "profile", "test", "demo", "--cassette", cassette],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "20 product pages checked" in run.stdout and "never found" not in run.stdout
    assert "found on only part of the pages" not in run.stdout
    one = subprocess.run([sys.executable, "-m", "recordhound", "profile", "test", "demo", "--cassette", cassette,
                          "--url", "http://demo.test/release/untitled"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert "title           raw=[] normalized=None [no selector matched]" in one.stdout
    assert "item: rejected: required field(s) missing: title" in one.stdout


def test_scrapy_shell_profile_check_without_redis_or_database(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    with ShopProcess(30, seed=3) as shop:
        product = shop.truth()["offers"][1]
        env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
               "REDIS_URL": "redis://127.0.0.1:1/0", "DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/none"}
        run = subprocess.run([sys.executable, "-m", "scrapy", "shell", shop.url.rstrip("/") + product["path"],
                              "-c", 'profile_check("demo")'], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"title           raw=[{product['title']!r}]" in run.stdout
    assert f"external_id     raw=[{product['external_id']!r}]" in run.stdout
    assert "[css:h1.title::text]" in run.stdout and "item: kept" in run.stdout
