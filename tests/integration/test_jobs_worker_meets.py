"""Where a job's worker meets the rest: the product DB (where jobs live) down for seconds, a worker stopped
while a person's stop of its job is closing the crawl, a worker whose crawl's close outlasts the worker
lease. Real workers, crawls, signals and a PostgreSQL role locked out; each crawl is checked against the
demo shop's truth (field by field, IDs and sequences) and the frontier's failed pages against its faults."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import children_of, kill_group_if_running, process_state, wait_for_pages
from tests.integration.test_jobs_worker import RELEASES, SEED, _cli, _env, _jobs
from tests.integration.test_jobs_worker import database  # noqa: F401 - the fixture
from tests.integration.truthcheck import assert_failed_only_faults, assert_product_db_matches, frontier_at
from tests.services import TRUSTED, PostgresDatabase

THROTTLE = ("--latency", "0.3",)  # every page 0.3 s late: a crawl long enough to act during it


def _worker(tmp_path: Path, database_url: str, *settings: str, failpoints: str = "",
            log: IO[str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "recordhound", "worker", *TRUSTED, *settings], cwd=tmp_path,
                            env=_env(database_url, failpoints), stdout=log or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _until(what: str, check: Any, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _frozen_child(pid: int) -> int | None:
    """A process under ``pid`` that stopped itself at a crash point (SIGSTOP: state T)."""
    return next((child for child in children_of(pid) if process_state(child) == "T"), None)


def _assert_crawl_matches_truth(tmp_path: Path, database_url: str, truth: dict[str, Any]) -> None:
    assert_product_db_matches(database_url, truth)  # field by field; IDs consecutive, sequences at max(id)
    assert_failed_only_faults(frontier_at(tmp_path), "demo", truth)


def test_the_product_db_down_for_seconds_neither_ends_an_idle_worker_nor_fails_its_running_crawl_job(
        tmp_path: Path) -> None:
    """The worker's role is locked out of PostgreSQL for 4 s while the worker waits for a job, then
    again while its crawl job runs. Before, the idle worker died with a traceback, and a heartbeat
    that could not be written stopped the crawl and failed the job. Now the worker waits (one line per
    try), the crawl goes on (its store rides the outage), and the job ends done in its first attempt."""
    with PostgresDatabase(own_role=True) as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        assert _cli(tmp_path, db.url, "job", "list").returncode == 0  # the schema
        log = tmp_path / "worker.log"
        with open(log, "w") as out:
            worker = _worker(tmp_path, db.url, "-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.5", log=out)
        try:
            time.sleep(2)
            db.lock_out()
            time.sleep(4)
            db.let_in()
            time.sleep(2)
            assert worker.poll() is None, log.read_text()[-3000:]
            assert _cli(tmp_path, db.url, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
            wait_for_pages(shop, 40)
            db.lock_out()
            time.sleep(4)
            db.let_in()
            job = _until("the job to end", lambda: next((j for j in _jobs(tmp_path, db.url)
                                                         if j["status"] not in ("queued", "running")), None), 240)
            assert worker.poll() is None, log.read_text()[-3000:]
        finally:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(120)
            kill_group_if_running(worker)
        text = log.read_text()
        assert (job["status"], job["attempts"], job["last_error"]) == ("done", 1, None), (job, text[-3000:])
        assert "job store (product DB) is unreachable" in text and "Traceback" not in text, text[-3000:]
        _assert_crawl_matches_truth(tmp_path, db.url, shop.truth())


def test_a_worker_started_while_the_product_db_is_down_waits_for_it_and_one_it_refuses_is_one_line(
        tmp_path: Path) -> None:
    """A worker started while its role is locked out of PostgreSQL waits (one line per try) and runs once
    the role is let in (one stopped meanwhile ends as an idle one does); a database that does not exist,
    one whose schema a newer recordhound migrated, and a SQLite file that is no database, are one ``error:``
    line, at once. Before, all died
    with a traceback from the schema migration at the worker's start (CI of 7 December 2026 met the first
    when the test above locked the role out before the worker, on a loaded machine, had started)."""
    with PostgresDatabase(own_role=True) as db:
        assert _cli(tmp_path, db.url, "job", "list").returncode == 0  # the schema
        db.lock_out()
        log = tmp_path / "worker.log"
        with open(log, "w") as out:
            worker = _worker(tmp_path, db.url, "--once", log=out)
        try:
            _until("the worker to say it waits", lambda: "unreachable" in log.read_text(), 60)
            assert worker.poll() is None, log.read_text()[-3000:]
            with open(tmp_path / "stopped.log", "w") as out:
                stopped = _worker(tmp_path, db.url, log=out)  # one stopped while it waits: as an idle one
            _until("the second worker to wait", lambda: "unreachable" in (tmp_path / "stopped.log").read_text(), 60)
            os.killpg(stopped.pid, signal.SIGTERM)
            assert stopped.wait(60) == 0, (tmp_path / "stopped.log").read_text()[-3000:]
            assert "0 jobs run" in (tmp_path / "stopped.log").read_text()
            db.let_in()
            assert worker.wait(timeout=120) == 0, log.read_text()[-3000:]
        finally:
            kill_group_if_running(worker)
        said = log.read_text()
        assert "0 jobs run" in said and "Traceback" not in said, said[-3000:]
        missing = db.url.rsplit("/", 1)[0] + "/rh_test_no_such_database"
        refused = _cli(tmp_path, missing, "worker", "--once")
        assert refused.returncode != 0
        assert "Traceback" not in refused.stderr and "rh_test_no_such_database" in refused.stderr, refused.stderr
        assert refused.stderr.strip().splitlines()[-1].startswith("error: "), refused.stderr
    newer = f"sqlite:///{tmp_path / 'newer.sqlite3'}"  # a schema a newer recordhound migrated
    assert _cli(tmp_path, newer, "job", "list").returncode == 0
    with sqlite3.connect(tmp_path / "newer.sqlite3") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    for args in (("worker", "--once"), ("job", "list")):
        said = _cli(tmp_path, newer, *args)
        assert said.returncode == 2 and said.stderr.count("\n") == 1, said.stderr[-3000:]
        assert "has schema revision 9999, newer than this recordhound's" in said.stderr, said.stderr
    (tmp_path / "notadb.sqlite3").write_bytes(b"not a database, " * 64)  # a review found a traceback here
    for args in (("worker", "--once"), ("job", "list")):
        said = _cli(tmp_path, f"sqlite:///{tmp_path / 'notadb.sqlite3'}", *args)
        assert said.returncode == 2 and said.stderr.count("\n") == 1, said.stderr[-3000:]
        assert "file is not a database" in said.stderr, said.stderr


def test_a_worker_stopped_while_a_person_s_stop_closes_its_crawl_does_not_force_that_close(
        tmp_path: Path, database: str) -> None:  # noqa: F811
    """A person stops the job: the worker sends its crawl SIGTERM and the crawl closes (its writer held
    at the crawl's end). The worker itself is stopped meanwhile (a supervisor's SIGTERM). Before, it sent
    the crawl a second SIGTERM, Scrapy's forced stop ("forcing unclean shutdown"); now it waits for the
    close it asked for, and the job ends stopped; resumed, it matches the shop's truth."""
    with ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        worker = _worker(tmp_path, database, "-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.2",
                         "-s", "RECORDHOUND_WORKER_STOP_SECONDS=60", failpoints="store.end_recorded=stop")
        writer = None
        try:
            wait_for_pages(shop, 40)
            [crawl] = _until("the crawl", lambda: children_of(worker.pid))
            assert _cli(tmp_path, database, "job", "stop", "1").returncode == 0
            writer = _until("the crawl's writer at the crawl's end", lambda: _frozen_child(crawl))
            os.kill(worker.pid, signal.SIGTERM)
            time.sleep(3)
            os.kill(writer, signal.SIGCONT)
            worker.wait(120)
        finally:
            if writer is not None and process_state(writer) not in (None, "Z"):
                os.kill(writer, signal.SIGCONT)
            kill_group_if_running(worker)
        [job] = _jobs(tmp_path, database)
        crawl_log = (tmp_path / ".recordhound" / "logs" / f"job-{job['id']}.log").read_text()
        assert "forcing unclean shutdown" not in crawl_log, crawl_log[-3000:]
        assert job["status"] == "stopped", job
        assert _cli(tmp_path, database, "job", "resume", "1").returncode == 0
        ran = _cli(tmp_path, database, "worker", "--once", *TRUSTED)
        assert ran.returncode == 0 and _jobs(tmp_path, database)[0]["status"] == "done", ran.stderr[-3000:]
        _assert_crawl_matches_truth(tmp_path, database, shop.truth())


def test_a_worker_whose_crawl_closes_longer_than_the_lease_is_not_taken_over_while_it_waits(
        tmp_path: Path, database: str) -> None:  # noqa: F811
    """Worker 1 is stopped (SIGTERM) and its crawl's close outlasts the worker lease (3 s; its writer
    held at the crawl's end). Before, worker 1 wrote no heartbeat while it waited, and worker 2 took the
    job over from the live worker 1 and crawled it beside the closing crawl. Now worker 1 beats while it
    waits; once its crawl is closed the job is queued, and worker 2 resumes it to the shop's truth."""
    lease = ("-s", "RECORDHOUND_WORKER_LEASE_SECONDS=3", "-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.5",
             "-s", "RECORDHOUND_WORKER_STOP_SECONDS=60")
    with ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        first = _worker(tmp_path, database, *lease, failpoints="store.end_recorded=stop")
        second, writer = None, None
        try:
            wait_for_pages(shop, 30)
            [crawl] = _until("the crawl", lambda: children_of(first.pid))
            os.kill(first.pid, signal.SIGTERM)
            writer = _until("the crawl's writer at the crawl's end", lambda: _frozen_child(crawl))
            second = _worker(tmp_path, database, *lease)
            time.sleep(8)  # the lease, twice over
            [job] = _jobs(tmp_path, database)
            assert children_of(second.pid) == [] and job["worker"].endswith(f":{first.pid}"), job
            os.kill(writer, signal.SIGCONT)
            first.wait(120)
            job = _until("the job done", lambda: next((j for j in _jobs(tmp_path, database)
                                                       if j["status"] == "done"), None), 240)
        finally:
            if writer is not None and process_state(writer) not in (None, "Z"):
                os.kill(writer, signal.SIGCONT)
            for worker in (first, second):
                if worker is not None and worker.poll() is None:
                    os.killpg(worker.pid, signal.SIGTERM)
                    worker.wait(120)
                if worker is not None:
                    kill_group_if_running(worker)
        assert job["attempts"] == 2 and not job.get("taken_over"), job  # queued by worker 1, not taken over
        _assert_crawl_matches_truth(tmp_path, database, shop.truth())


def test_job_start_of_a_stopped_crawl_runs_it_again_from_the_beginning(tmp_path: Path,
                                                                      database: str) -> None:  # noqa: F811
    """A crawl job stopped part-way, then `job start` (from the beginning, as the admin's button says).
    Before, it resumed where it stopped (the frontier kept its done pages); now its frontier is reset
    before the crawl starts: every page the finished job counts was fetched by this run. (Pages 1 s late: the
    stop comes while the crawl runs, also on a loaded machine: with 0.3 s the crawl had ended before it.)"""
    with ShopProcess(RELEASES, seed=SEED, throttle=("--latency", "1.0")) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        worker = _worker(tmp_path, database, "-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.2")
        try:
            wait_for_pages(shop, 60)
            assert _cli(tmp_path, database, "job", "stop", "1").returncode == 0
            _until("the job stopped", lambda: _jobs(tmp_path, database)[0]["status"] == "stopped")
            served = shop.pages_served()
            assert _cli(tmp_path, database, "job", "start", "1").returncode == 0
            job = _until("the job done", lambda: next((j for j in _jobs(tmp_path, database)
                                                       if j["status"] == "done"), None), 240)
            served = shop.pages_served() - served
        finally:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(120)
            kill_group_if_running(worker)
        progress = job["progress"]
        assert served >= progress["done"] == progress["total"] > 200, (served, job)  # each done page fetched now
        assert job["reset_crawl"] is False, job  # said once the reset was done: a take-over does not reset again
        _assert_crawl_matches_truth(tmp_path, database, shop.truth())
