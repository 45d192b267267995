"""A crawl job whose frontier is in Redis meets Redis down: at the worker's reset of the crawl (`job start`).
A private redis-server of the test's own, stopped and started by PID; the crawl is checked against the demo
shop's truth (field by field, IDs and sequences) and the frontier's failed pages against its faults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from recordhound.demo.process import ShopProcess
from tests.integration.test_jobs_worker import RELEASES, SEED, _env
from tests.integration.test_jobs_worker_meets import _until
from tests.integration.test_jobs_worker_outage import POLL, THROTTLE, _stop
from tests.integration.truthcheck import assert_failed_only_faults, assert_product_db_matches, frontier_at
from tests.redisserver import RedisServer
from tests.services import TRUSTED, PostgresDatabase

PREFIX = "recordhound"  # the default: the Redis is the test's own


def _env_with(database_url: str, redis_url: str) -> dict[str, str]:
    return {**_env(database_url), "REDIS_URL": redis_url}


def _cli(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recordhound", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _job(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    listed = _cli(tmp_path, env, "job", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [job] = json.loads(listed.stdout)
    return dict(job)


def test_job_start_with_redis_down_at_the_claim_waits_for_it_then_resets_and_crawls(tmp_path: Path) -> None:
    """`job start` of a stopped crawl job whose frontier is in Redis, Redis down when a worker claims it:
    the worker waits for Redis (one line per try) to reset the crawl's frontier, then crawls to the shop's
    truth; the job is done in its first attempt, without an error. Before, the reset's connection error
    failed the job at once (a person had to `job start` it again)."""
    server = RedisServer(tmp_path / "redis", "--save", "").start()
    try:
        with PostgresDatabase() as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop, \
                open(tmp_path / "worker.log", "w") as log:
            env = _env_with(db.url, server.url)
            for args in (("job", "crawl", "demo", "--base-url", shop.url), ("job", "stop", "1"), ("job", "start", "1")):
                assert _cli(tmp_path, env, *args).returncode == 0, args
            server.stop()
            worker = subprocess.Popen([sys.executable, "-m", "recordhound", "worker", *TRUSTED, *POLL], cwd=tmp_path,
                                      env=env, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
            try:
                _until("the worker to wait for Redis",
                       lambda: "frontier is unreachable" in (tmp_path / "worker.log").read_text(), 60)
                assert worker.poll() is None
                server.start()
                job = _until("the job to end", lambda: (j := _job(tmp_path, env))["status"] not in
                             ("queued", "running") and j, 180)
            finally:
                _stop(worker)
            assert (job["status"], job["attempts"], job["reset_crawl"], job["last_error"]) == \
                ("done", 1, False, None), job
            truth = shop.truth()
            assert_product_db_matches(db.url, truth)
            assert_failed_only_faults(frontier_at(tmp_path, server.url, PREFIX), "demo", truth)
    finally:
        server.kill()
