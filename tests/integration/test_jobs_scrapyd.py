"""A crawl job runs on scrapyd when RECORDHOUND_JOB_SCRAPYD_TARGET names one: the worker schedules
it there (a real scrapyd with the deployed egg), follows it to the end, and reads its progress from
the shared Redis frontier."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import crawl_prefix
from tests.integration.test_scrapyd import _assert_stored, deployment  # noqa: F401 - the fixture
from tests.services import redis_url


def test_a_crawl_job_runs_on_scrapyd_when_one_is_configured(deployment) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    deploy, shop, prefix = deployment
    queued = deploy.recordhound("job", "crawl", "demo", "--base-url", shop.url)
    assert queued.returncode == 0, queued.stderr
    ran = subprocess.run([sys.executable, "-m", "recordhound", "worker", "--once",
                          "-s", "RECORDHOUND_JOB_SCRAPYD_TARGET=local", "-s", f"RECORDHOUND_REDIS_PREFIX={prefix}",
                          "-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true", "-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.5"],
                         cwd=deploy.project, capture_output=True, text=True, timeout=600, env={**os.environ, **deploy.env})
    assert ran.returncode == 0, ran.stderr[-3000:]
    [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
    assert job["status"] == "done" and job["external"].startswith("demo--job"), job
    frontier = RedisFrontier(redis_url(), crawl_prefix(prefix, "demo"))
    frontier.open()
    counts = frontier.counts()
    frontier.close()
    assert counts.drained and counts.done > 1000, counts
    # the counts of the crawl's end (read after scrapyd lists it finished), not of the worker's last look
    assert job["progress"] == {"done": counts.done, "total": counts.done, "unit": "pages"}
    finished = {found["id"] for found in deploy.client().jobs()["finished"]}
    assert job["external"] in finished
    _assert_stored(shop, deploy.env["DATABASE_URL"])
