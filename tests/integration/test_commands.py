"""The commands a user types: the one-command demo, db upgrade, and a crawl with a bad profile."""

from __future__ import annotations

import json

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from recordhound.db.migrate import head_revision
from recordhound.sources import find_profile
from tests.integration.crawlers import kill_group_if_running
from tests.integration.dbcheck import ProductDb
from tests.services import run_crawl


def _recordhound(workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recordhound", *args], cwd=workdir, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def test_demo_command_runs_the_main_job_on_embedded_defaults(tmp_path: Path) -> None:
    env = {"DATABASE_URL": ""}
    done = subprocess.run([sys.executable, "-m", "recordhound", "demo", "--releases", "60"], cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stdout[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) < 30, done.stdout  # a quiet first run: Scrapy's log is in the file it names
    assert "progress: " in done.stdout and " pages/s " in done.stdout
    summary = next(i for i, line in enumerate(lines) if line.startswith("recordhound crawl finished"))
    assert lines[-1].startswith("  health:") and all(line.startswith("  ") for line in lines[summary + 1:])
    assert "offers:   62 new" in done.stdout
    log = (tmp_path / ".recordhound" / "logs" / "demo.log").read_text()
    assert "recordhound: frontier embedded" in log and "Disabled" not in log
    db = ProductDb(f"sqlite:///{tmp_path / 'recordhound.sqlite3'}")
    assert db.counts()["releases"] == 60
    before = db.snapshot()
    review = _recordhound(tmp_path, "demo", "--releases", "80", "--epoch", "1", "--review", env=env)
    assert review.returncode == 0, review.stderr[-3000:]
    parked = int(review.stdout.split(" parked for review")[0].rsplit(" ", 1)[-1])
    assert parked > 0  # the bigger catalog has names the first import did not create
    listed = _recordhound(tmp_path, "review", "list", "--json", env=env)
    entries = json.loads(listed.stdout)
    assert entries and sum(e["waiting"] for e in entries if e["kind"] != "price") >= parked
    assert db.counts()["artists"] == before["counts"]["artists"]  # nothing unapproved got in
    db.close()


def test_ctrl_c_at_the_demo_stops_its_crawl_gracefully(tmp_path: Path) -> None:
    """A terminal's Ctrl-C at `recordhound demo` (SIGINT to its process group). Before, the shop died
    with it and ``subprocess.call`` killed the crawl with SIGKILL 0.25 s later: no close, its leases
    held. Now the demo and its shop ignore it, and the crawl closes as a graceful stop does: its
    frontier closed with every lease returned, the demo's exit code the crawl's (0)."""
    demo = subprocess.Popen([sys.executable, "-m", "recordhound", "demo", "--releases", "2000"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "DATABASE_URL": ""}, start_new_session=True)
    log = tmp_path / ".recordhound" / "logs" / "demo.log"
    try:
        deadline = time.monotonic() + 120
        while not log.exists() or "Storing items of source" not in log.read_text():
            assert demo.poll() is None and time.monotonic() < deadline, demo.communicate()[0][-3000:]
            time.sleep(0.05)
        time.sleep(1)
        os.killpg(demo.pid, signal.SIGINT)  # as a terminal does
        output, _ = demo.communicate(timeout=120)
    finally:
        kill_group_if_running(demo)
    text = log.read_text()
    assert demo.returncode == 0, output[-3000:]
    assert "Frontier closed (shutdown)" in text and "Spider closed (shutdown)" in text, text[-3000:]
    status = _recordhound(tmp_path, "frontier", "status", "--source", "demo", "--json", env={"DATABASE_URL": ""})
    [crawl] = json.loads(status.stdout)
    assert crawl["leased"] == 0 and crawl["done"] > 0, crawl


def test_db_upgrade_creates_the_schema(database_url: str, tmp_path: Path) -> None:
    done = _recordhound(tmp_path, "db", "upgrade", env={"DATABASE_URL": database_url})
    assert done.returncode == 0, done.stderr
    assert f"schema at revision {head_revision()}" in done.stdout
    db = ProductDb(database_url)
    assert db.counts()["offers"] == 0
    db.close()


def test_invalid_profile_fails_before_crawling_naming_the_key(tmp_path: Path) -> None:
    document = yaml.safe_load(find_profile("demo").read_text())
    document["fields"]["title"] = {"css": "h1[[["}
    document["base_url"] = "http://127.0.0.1:9/"  # nothing listens: a crawl would record errors
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(document))
    result = run_crawl(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite3'}", "-a", "source=broken.yaml")
    assert result.returncode != 0
    assert "broken.yaml: fields.title.css: invalid css selector" in result.stderr
    assert result.stats == {}  # the crawl never started
    assert not (tmp_path / "p.sqlite3").exists()


def test_thread_writer_stores_the_same_catalog(tmp_path: Path) -> None:
    from recordhound.demo.process import ShopProcess

    url = f"sqlite:///{tmp_path / 'p.sqlite3'}"
    with ShopProcess(60, seed=3) as shop:
        expected = shop.truth()["counts"]
        result = run_crawl(tmp_path, url, "-a", "source=demo", "-a", f"base_url={shop.url}",
                           "-s", "RECORDHOUND_STORE_WRITER=thread")
    assert result.returncode == 0, result.stderr[-2000:]
    db = ProductDb(url)
    counts = db.counts()
    assert (counts["releases"], counts["offers"], counts["artists"]) == (
        expected["releases"], expected["offers"], expected["artists"])
    db.close()
