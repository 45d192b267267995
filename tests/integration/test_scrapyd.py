"""Deploy the egg to a real scrapyd with scrapyd-deploy and crawl on 2 scrapyd jobs sharing Redis."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recordhound.demo.process import ShopProcess
from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import crawl_prefix
from recordhound.scrapyd_client import ScrapydClient, Target
from tests.integration.dbcheck import ProductDb
from tests.scrapyd_server import PASSWORD, PROJECT_ROOT, USERNAME, ScrapydServer
from tests.services import PostgresDatabase, redis_url


class Deployment:
    """A copy of the project whose scrapy.cfg points at the test's scrapyd, and that scrapyd."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.project = tmp / "project"
        shutil.copytree(PROJECT_ROOT, self.project, ignore=shutil.ignore_patterns(
            ".venv", ".git", "__pycache__", "*.egg-info", "build", ".pytest_cache", ".recordhound", "*.sqlite3*"))
        (tmp / "scrapyd").mkdir()
        self.env = env
        self.server = ScrapydServer(tmp / "scrapyd")

    def start(self) -> None:
        """scrapyd on a free port, and the project's deploy target pointing at it."""
        self.server.start()
        (self.project / "scrapy.cfg").write_text(
            f"[settings]\ndefault = recordhound.settings\n\n[deploy:local]\nurl = {self.server.url}\n"
            f"project = recordhound\nusername = {USERNAME}\npassword = {PASSWORD}\n")

    def recordhound(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "recordhound", *args], cwd=self.project, capture_output=True,
                              text=True, timeout=120, env={**os.environ, **self.env})

    def client(self) -> ScrapydClient:
        return ScrapydClient(Target("local", self.server.url, "recordhound", USERNAME, PASSWORD))

    def wait_finished(self, jobs: list[str], timeout: float = 300) -> dict[str, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            finished = {job["id"]: job for job in self.client().jobs()["finished"]}
            if all(job in finished for job in jobs):
                return finished
            time.sleep(0.5)
        raise AssertionError(f"scrapyd jobs did not finish: {self.client().jobs()}")


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[tuple[Deployment, ShopProcess, str]]:
    with ShopProcess(1000, seed=17) as shop, PostgresDatabase() as database:
        prefix = f"rhtest-{uuid.uuid4().hex[:8]}"
        env = {"REDIS_URL": redis_url(), "DATABASE_URL": database.url}
        os.environ.update(env)  # scrapyd (and so its jobs) inherits these
        try:
            deploy = Deployment(tmp_path, env)
            deploy.start()
            try:
                done = subprocess.run([str(Path(sys.executable).parent / "scrapyd-deploy"), "local", "-v", "t1"],
                                      cwd=deploy.project, capture_output=True, text=True, timeout=180)
                assert done.returncode == 0, done.stdout + done.stderr
                yield deploy, shop, prefix
            finally:
                deploy.server.stop()
        finally:
            for name in env:
                os.environ.pop(name, None)
            frontier = RedisFrontier(redis_url(), crawl_prefix(prefix, "demo"))
            frontier.open()
            frontier.reset()
            frontier.close()


def _schedule(deploy: Deployment, shop: ShopProcess, prefix: str, nodes: int) -> list[str]:
    done = deploy.recordhound("schedule", "demo", "--nodes", str(nodes), "--arg", f"base_url={shop.url}",
                              "--setting", f"RECORDHOUND_REDIS_PREFIX={prefix}",
                              "--setting", "RECORDHOUND_TRUST_NEW_ENTITIES=true")
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _assert_stored(shop: ShopProcess, database_url: str) -> None:
    truth = shop.truth()
    db = ProductDb(database_url)
    counts = db.counts()
    assert (counts["releases"], counts["offers"]) == (truth["counts"]["releases"], truth["counts"]["offers"])
    db.close()


def test_schedule_two_nodes_through_scrapyd(deployment) -> None:  # type: ignore[no-untyped-def]
    deploy, shop, prefix = deployment
    jobs = _schedule(deploy, shop, prefix, 2)
    assert len(jobs) == 2
    deploy.wait_finished(jobs)
    _assert_stored(shop, deploy.env["DATABASE_URL"])
    logs = [p.read_text() for p in (deploy.server.folder / "data" / "logs").rglob("*.log")]
    assert len(logs) == 2 and all("'response_received_count':" in log for log in logs)
    listed = deploy.recordhound("jobs").stdout
    assert all(f"finished  {job}" in listed for job in jobs) and "source=demo" in listed


def test_killed_scrapyd_job_leaves_its_leases_and_a_reschedule_finishes(deployment) -> None:  # type: ignore[no-untyped-def]
    deploy, shop, prefix = deployment
    jobs = _schedule(deploy, shop, prefix, 2)
    deadline = time.monotonic() + 120
    running: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not (running and shop.pages_served() > 300):
        running = [j for j in deploy.client().jobs()["running"] if j["id"] in jobs and j.get("pid")]
        time.sleep(0.2)
    victim = running[0]
    os.kill(int(victim["pid"]), signal.SIGKILL)
    again = _schedule(deploy, shop, prefix, 1)
    deploy.wait_finished(jobs + again)
    _assert_stored(shop, deploy.env["DATABASE_URL"])
    truth, hits = shop.truth(), shop.hits()
    assert all(hits.get(o["path"], 0) >= 1 for o in truth["offers"])


def test_scrapyd_commands_say_what_is_wrong_and_cancel_with_sigterm(deployment) -> None:  # type: ignore[no-untyped-def]
    deploy, shop, prefix = deployment
    unknown = deploy.recordhound("cancel", "nosuchjob")
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: no pending or running job 'nosuchjob'")
    cfg = deploy.project / "scrapy.cfg"
    cfg.write_text(cfg.read_text() + f"\n[deploy:other]\nurl = {deploy.server.url}\nproject = nope\n"
                   f"username = {USERNAME}\npassword = {PASSWORD}\n")
    project = deploy.recordhound("cancel", "x", "--target", "other")
    assert project.returncode == 2 and "project 'nope' not found" in project.stderr
    refused = deploy.recordhound("schedule", "nosuchsource")
    assert refused.returncode == 2 and "not scheduled" in refused.stderr and "nosuchsource" in refused.stderr
    assert not any(deploy.client().jobs().values())  # nothing reached scrapyd
    nospider = deploy.recordhound("schedule", "demo", "--target", "other")
    assert nospider.returncode == 2 and "project 'nope' not found" in nospider.stderr

    # a job scheduled with scrapyd's own API (no recordhound job id): `jobs` names its source from its log
    own = deploy.client()._call("POST", "schedule.json", project="recordhound", spider="catalog", source="demo",
                                base_url=shop.url, setting=[f"RECORDHOUND_REDIS_PREFIX={prefix}",
                                                            "RECORDHOUND_TRUST_NEW_ENTITIES=true",
                                                            # (slow enough to be running when cancelled: the
                                                            # shop's 1,100 pages took ~4 s, and CI once saw the
                                                            # crawl end before `jobs` and `cancel` came)
                                                            "RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND=40"])
    job = str(own["jobid"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and shop.pages_served() < 50:
        time.sleep(0.2)
    listed = deploy.recordhound("jobs")
    line = next(ln for ln in listed.stdout.splitlines() if job in ln)
    assert "source=demo" in line, listed.stdout
    cancelled = deploy.recordhound("cancel", job)
    assert cancelled.returncode == 0 and "was running, sent SIGTERM" in cancelled.stdout, cancelled.stderr
    deploy.wait_finished([job])
    log = next((deploy.server.folder / "data" / "logs").rglob(f"{job}.log")).read_text()
    assert "Received SIGTERM" in log
