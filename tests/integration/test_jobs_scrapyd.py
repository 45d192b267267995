"""A crawl job runs on scrapyd when RECORDHOUND_JOB_SCRAPYD_TARGET names one: the worker schedules
it there (a real scrapyd with the deployed egg), follows it to the end, and reads its progress from
the shared Redis frontier."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from recordhound.frontier.backend import Counts
from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import crawl_prefix
from tests.integration.test_scrapyd import _assert_stored, deployment  # noqa: F401 - the fixture
from tests.integration.truthcheck import assert_failed_only_faults, assert_product_db_matches, frontier_at
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


def _worker(deploy, prefix: str, *extra: str) -> list[str]:  # type: ignore[no-untyped-def]
    """A worker whose crawls run on the test's scrapyd, slowed (one page per 10 ms) so that one runs
    for some seconds: long enough to kill its worker while it runs."""
    return [sys.executable, "-m", "recordhound", "worker", *extra, "-s", "RECORDHOUND_JOB_SCRAPYD_TARGET=local",
            "-s", f"RECORDHOUND_REDIS_PREFIX={prefix}", "-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true",
            "-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.5", "-s", "DOWNLOAD_DELAY=0.01",
            "-s", "RANDOMIZE_DOWNLOAD_DELAY=false"]


def _killed_while_running(deploy, prefix: str,  # type: ignore[no-untyped-def]
                          how: int = signal.SIGKILL) -> dict[str, object]:
    """Start a worker, wait until scrapyd runs its crawl, kill -9 (or ``how``) the worker; the job as it was left."""
    worker = subprocess.Popen(_worker(deploy, prefix), cwd=deploy.project, env={**os.environ, **deploy.env},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
            running = {found["id"] for found in deploy.client().jobs()["running"]}
            if job["status"] == "running" and job.get("external") in running:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"the job never ran on scrapyd: {job}, {deploy.client().jobs()}")
    finally:
        worker.send_signal(how)
        worker.wait(120)
    [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout) if how != signal.SIGKILL else [job]
    return job


def _scrapyd_ids(deploy) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    return {state: {found["id"] for found in jobs} for state, jobs in deploy.client().jobs().items()}


def test_the_next_worker_follows_or_stops_the_scrapyd_crawl_of_a_worker_killed_while_it_ran(
        deployment) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """A worker killed (-9) while its job's crawl runs on scrapyd leaves that crawl running there. The
    next worker follows that same scrapyd job to its end (before: it scheduled a second crawl beside
    it); and when a person stopped the job meanwhile, the next worker cancels the crawl on scrapyd
    before the job reads ``stopped`` (before: marked stopped while scrapyd went on crawling)."""
    deploy, shop, prefix = deployment
    assert deploy.recordhound("job", "crawl", "demo", "--base-url", shop.url).returncode == 0
    first = _killed_while_running(deploy, prefix)
    followed = subprocess.run(_worker(deploy, prefix, "--once"), cwd=deploy.project, capture_output=True, text=True,
                              timeout=600, env={**os.environ, **deploy.env})
    assert followed.returncode == 0, followed.stderr[-3000:]
    [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
    assert job["status"] == "done" and job["external"] == first["external"], job
    ids = _scrapyd_ids(deploy)
    assert ids == {"pending": set(), "running": set(), "finished": {first["external"]}}, ids  # one crawl in all
    truth = shop.truth()
    assert_product_db_matches(deploy.env["DATABASE_URL"], truth)
    assert_failed_only_faults(frontier_at(deploy.project, redis_url(), prefix), "demo", truth)

    assert deploy.recordhound("job", "start", str(job["id"])).returncode == 0  # again, from the beginning
    killed = subprocess.run(_worker(deploy, prefix, "--once"), cwd=deploy.project, capture_output=True, text=True,
                            timeout=600, env={**os.environ, **deploy.env, "RECORDHOUND_FAILPOINTS":
                                              "jobs.scrapyd_scheduled=kill"})  # before its first beat
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
    second = job["external"]  # written before scrapyd was asked: the next worker knows the crawl to cancel
    assert second == f"demo--job{job['id']}-{job['attempts']}", job
    _until(lambda: second in _scrapyd_ids(deploy)["running"])
    stop = deploy.recordhound("job", "stop", str(job["id"]))
    assert stop.returncode == 0 and "stopping" in stop.stdout, stop.stdout + stop.stderr
    stopped = subprocess.run(_worker(deploy, prefix, "--once"), cwd=deploy.project, capture_output=True, text=True,
                             timeout=600, env={**os.environ, **deploy.env})
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
    ids = _scrapyd_ids(deploy)
    assert job["status"] == "stopped" and job["next_run_at"] is None, job
    assert ids == {"pending": set(), "running": set(), "finished": {first["external"], second}}, ids

    # the worker's own stop (SIGTERM: a restart, a deploy) stops its crawl on scrapyd too; the job waits
    assert deploy.recordhound("job", "resume", str(job["id"])).returncode == 0
    third = _killed_while_running(deploy, prefix, signal.SIGTERM)
    [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
    assert job["status"] == "queued", job
    _until(lambda: third["external"] in _scrapyd_ids(deploy)["finished"])  # cancelled, not crawling on


def _until(check) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _frontier_counts(prefix: str) -> Counts:
    frontier = RedisFrontier(redis_url(), crawl_prefix(prefix, "demo"))
    frontier.open()
    try:
        return frontier.counts()
    finally:
        frontier.close()


def test_a_followed_crawl_that_was_cancelled_is_run_again_not_recorded_done(
        deployment) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """A worker cancels its scrapyd crawl (its own stop) and dies before it can record the job's end; the
    crawl is still closing (held here with SIGSTOP: its SIGTERM waits) when the next worker takes the job
    over and follows it. scrapyd then lists it finished, but its frontier still has pages to fetch: the
    job is not done (before: recorded done, the crawl cut short); the worker runs the crawl again (the
    attempt's own scrapyd job, resuming the frontier) and the job is done once the shop is all in."""
    deploy, shop, prefix = deployment
    assert deploy.recordhound("job", "crawl", "demo", "--base-url", shop.url).returncode == 0
    first = _killed_while_running(deploy, prefix)
    _until(lambda: _frontier_counts(prefix).done >= 100)  # mid-crawl
    [crawl] = [found for found in deploy.client().jobs()["running"] if found["id"] == first["external"]]
    os.kill(int(crawl["pid"]), signal.SIGSTOP)  # a close that takes a while: listed running meanwhile
    try:
        assert deploy.client().cancel(str(first["external"])) == "running"
        follower = subprocess.Popen(_worker(deploy, prefix, "--once"), cwd=deploy.project,
                                    env={**os.environ, **deploy.env}, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)

        def following() -> bool:  # taken over, and a beat written after its first look at scrapyd
            [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
            return job["worker"] != first["worker"] and job["heartbeat"] > job["started_at"]
        _until(following)
    finally:
        os.kill(int(crawl["pid"]), signal.SIGCONT)  # the cancel's SIGTERM lands: the crawl returns its leases
    try:
        _, stderr = follower.communicate(timeout=600)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, stderr[-3000:]
    [job] = json.loads(deploy.recordhound("job", "list", "--json").stdout)
    counts = _frontier_counts(prefix)
    assert not (job["status"] == "done" and not counts.drained), (job, counts)  # done with pages left
    rerun = f"demo--job{job['id']}-{job['attempts']}"
    assert job["status"] == "done" and job["external"] == rerun != first["external"], job
    assert counts.drained and counts.status == "completed", counts
    ids = _scrapyd_ids(deploy)
    assert ids == {"pending": set(), "running": set(), "finished": {first["external"], rerun}}, ids
    truth = shop.truth()
    assert_product_db_matches(deploy.env["DATABASE_URL"], truth)
    assert_failed_only_faults(frontier_at(deploy.project, redis_url(), prefix), "demo", truth)
