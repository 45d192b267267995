"""The worker while the product DB (where jobs live) is down, tested under outages of their own: a beat
that could not be written is carried to the next beat or to the run's end; a worker stopped (Ctrl-C)
during an outage stops its crawl and does not wait for the DB to say so; `job start`'s reset of a crawl
is refused while a node of it is alive. Real workers, crawls and signals; a PostgreSQL role of the
test's own locked out; each crawl checked against the demo shop's truth."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from recordhound.db.engine import PG_WRITE_LOCK
from recordhound.demo.process import ShopProcess
from recordhound.frontier.factory import make_backend
from tests.integration.crawlers import children_of, kill_group_if_running, wait_for_pages
from tests.integration.test_jobs_worker import RELEASES, SEED, _cli, _jobs
from tests.integration.test_jobs_worker_meets import _assert_crawl_matches_truth, _until, _worker
from tests.integration.truthcheck import frontier_at
from tests.services import PG_ADMIN_URL, TRUSTED, PostgresDatabase, crawl_env

THROTTLE = ("--latency", "0.1")  # every page 0.1 s late: a crawl long enough to act during it
POLL = ("-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.3")


def _job_row(db: PostgresDatabase) -> dict[str, Any]:
    """The job as its row holds it, read as PostgreSQL's superuser: also while the test's role is locked out."""
    engine = create_engine(make_url(PG_ADMIN_URL).set(database=db.name))
    try:
        with engine.connect() as conn:
            meta = conn.execute(text("SELECT metadata FROM sources WHERE id = 1")).scalar_one()
    finally:
        engine.dispose()
    return dict((json.loads(meta) if isinstance(meta, str) else meta)["job"])


def _frontier_file(tmp_path: Path) -> str:
    backend = make_backend(frontier_at(tmp_path), "demo", timeout=10.0)
    backend.open()  # the crawl's frontier file, as a crawl run before leaves it
    backend.close()
    return str(backend.path)  # type: ignore[attr-defined]


@contextmanager
def _frontier_write_locked(tmp_path: Path) -> Iterator[None]:
    """The frontier file's write lock held: the worker's reset (`job start`) waits for it (up to 10 s)."""
    conn = sqlite3.connect(_frontier_file(tmp_path), isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def _started_again(tmp_path: Path, db: PostgresDatabase, shop: ShopProcess) -> None:
    """A crawl job stopped before it ran, then `job start`: queued, its frontier to be reset."""
    for args in (("job", "crawl", "demo", "--base-url", shop.url), ("job", "stop", "1"), ("job", "start", "1")):
        assert _cli(tmp_path, db.url, *args).returncode == 0, args
    assert _job_row(db)["reset_crawl"] is True


def _reset_during_an_outage(tmp_path: Path, db: PostgresDatabase, worker: subprocess.Popen[str]) -> int:
    """The worker claims the job; the DB goes down before the worker's beat after the frontier's reset
    (the reset waits for the frontier's write lock meanwhile). Returns the crawl's pid once it is started
    (it reaches for the DB a second or more later, after its imports: a crawl refuses to start without it)."""
    with _frontier_write_locked(tmp_path):
        _until("the job claimed", lambda: _job_row(db)["status"] == "running", 30)
        db.lock_out()
    [crawl] = _until("the crawl", lambda: children_of(worker.pid), 30)
    job = _job_row(db)
    assert (job["status"], job["reset_crawl"]) == ("running", True), job  # the reset's beat was not written
    return int(crawl)


def _job_ended(tmp_path: Path, db: PostgresDatabase, timeout: float, status: str = "") -> dict[str, Any]:
    """The job once its run has ended (neither queued nor running; ``status``: once it reads that)."""
    return _until(f"the job {status or 'ended'}", lambda: next(
        (j for j in _jobs(tmp_path, db.url) if (j["status"] == status if status else
                                                j["status"] not in ("queued", "running"))), None), timeout)


def _resumed_to_its_end(tmp_path: Path, db: PostgresDatabase) -> dict[str, Any]:
    """`job resume` of a failed job, and the job once done."""
    assert _cli(tmp_path, db.url, "job", "resume", "1").returncode == 0
    return _job_ended(tmp_path, db, 180, "done")


def _assert_done(job: dict[str, Any], tmp_path: Path, db: PostgresDatabase, shop: ShopProcess,
                                attempt: int = 1) -> None:
    """The job done in that attempt (the first unless said), its reset written; the crawl to the shop's truth."""
    assert (job["status"], job["attempts"], job["reset_crawl"]) == ("done", attempt, False), job
    assert attempt > 1 or job["last_error"] is None, job
    _assert_crawl_matches_truth(tmp_path, db.url, shop.truth())


def _stop(worker: subprocess.Popen[str]) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(120)
    kill_group_if_running(worker)


def test_a_beat_not_written_in_an_outage_is_written_with_the_next_beat(tmp_path: Path) -> None:
    """`job start`'s reset is done while the DB is down: the beat saying so (``reset_crawl`` false) is
    not written. Once the DB is back the next beat writes it, while the crawl still runs (a take-over
    from then on would not reset the crawl again); the job ends done in one attempt, to the shop's truth."""
    with PostgresDatabase(own_role=True) as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        _started_again(tmp_path, db, shop)
        worker = _worker(tmp_path, db.url, *POLL)
        try:
            _reset_during_an_outage(tmp_path, db, worker)
            db.let_in()
            job = _until("the reset written", lambda: (j := _job_row(db))["reset_crawl"] is False and j, 30)
            assert job["status"] == "running", job  # by a beat, not by the run's end
            job = _job_ended(tmp_path, db, 120)
        finally:
            _stop(worker)
        _assert_done(job, tmp_path, db, shop)


def test_a_run_that_ends_in_an_outage_records_its_end_with_the_beats_not_written(tmp_path: Path) -> None:
    """The reset's beat is not written (the DB down), and the crawl dies in the same outage (SIGKILL).
    The worker records the run's end once the DB is back: failed, with the reset's ``reset_crawl`` false
    (before the end carried no beat, the job would reset a crawl that ran); resumed, the crawl goes on
    to the shop's truth."""
    with PostgresDatabase(own_role=True) as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        _started_again(tmp_path, db, shop)
        worker = _worker(tmp_path, db.url, *POLL)
        try:
            crawl = _reset_during_an_outage(tmp_path, db, worker)
            os.killpg(crawl, signal.SIGKILL)  # the crawl and its writer
            time.sleep(2)  # the run has ended; its end waits for the DB
            assert worker.poll() is None and _job_row(db)["status"] == "running"
            db.let_in()
            job = _until("the run's end recorded", lambda: (j := _job_row(db))["status"] != "running" and j, 30)
            assert (job["status"], job["reset_crawl"], job["pid"]) == ("failed", False, None), job
            assert "exited with code -9" in job["last_error"] and job["finished_at"] > job["started_at"], job
            job = _resumed_to_its_end(tmp_path, db)
        finally:
            _stop(worker)
        _assert_done(job, tmp_path, db, shop, attempt=2)  # resumed, not reset


def test_ctrl_c_at_a_worker_in_an_outage_stops_its_crawl_and_the_job_resumes_after(tmp_path: Path) -> None:
    """The DB goes down while a crawl job runs, then the worker gets a Ctrl-C. It stops its crawl (one
    SIGTERM; the crawl's close waits for the DB to store its items, so it is killed after the worker's stop
    time, 4 s here: what it did not ack is fetched again) and exits while the DB is still down, its run's
    end not recorded (not tried until the DB is back). Once the DB is back the next worker takes the job
    over (running, its worker gone: not failed) and resumes the crawl to the shop's truth."""
    with PostgresDatabase(own_role=True) as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        assert _cli(tmp_path, db.url, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        worker = _worker(tmp_path, db.url, *POLL, "-s", "RECORDHOUND_WORKER_STOP_SECONDS=4")
        try:
            wait_for_pages(shop, 40)
            [crawl] = _until("the crawl", lambda: children_of(worker.pid))
            db.lock_out()
            time.sleep(1)
            os.killpg(worker.pid, signal.SIGINT)  # as a terminal does
            worker.wait(30)
            assert children_of(crawl) == [] and not os.path.exists(f"/proc/{crawl}"), "the crawl outlived its worker"
            job = _job_row(db)
            assert job["status"] == "running" and job["worker"].endswith(f":{worker.pid}"), job  # not recorded
        finally:
            db.let_in()
            _stop(worker)
        log = (tmp_path / ".recordhound" / "logs" / "job-1.log").read_text()
        assert "shutting down gracefully" in log and "forcing unclean shutdown" not in log, log[-3000:]
        ran = _cli(tmp_path, db.url, "worker", "--once", *TRUSTED)
        [job] = _jobs(tmp_path, db.url)
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert (job["status"], job["attempts"], job["last_error"]) == ("done", 2, None), job
        _assert_crawl_matches_truth(tmp_path, db.url, shop.truth())


def _node(tmp_path: Path, database_url: str, base_url: str) -> subprocess.Popen[str]:
    """A crawl node of the job's crawl (the same frontier), outside any worker."""
    command = [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo", "-a", f"base_url={base_url}",
               *TRUSTED, "-s", "LOG_FILE=node.log"]
    return subprocess.Popen(command, cwd=tmp_path, env=crawl_env(DATABASE_URL=database_url, REDIS_URL=""),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, start_new_session=True)


def _freeze_between_writes(tmp_path: Path, node: subprocess.Popen[str], database_url: str) -> None:
    """SIGSTOP to the node (and its writer), at a moment it holds no write lock on the frontier file and
    its writer none on the product DB (the worker's claim takes that lock too: a node frozen mid-batch
    held it for as long as the test waited)."""
    conn = sqlite3.connect(_frontier_file(tmp_path), isolation_level=None, timeout=0.2)
    product = create_engine(database_url, poolclass=NullPool)
    try:
        for _ in range(100):
            os.killpg(node.pid, signal.SIGSTOP)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
                if _product_db_write_lock_free(product):
                    return
            except sqlite3.OperationalError:  # frozen mid-write: again
                pass
            os.killpg(node.pid, signal.SIGCONT)
            time.sleep(0.1)
    finally:
        conn.close()
        product.dispose()
    raise AssertionError("the node never left the frontier's and the product DB's write locks")


def _product_db_write_lock_free(product: Engine) -> bool:
    with product.connect() as db:
        taken = bool(db.execute(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": PG_WRITE_LOCK}).scalar())
        db.rollback()
    return taken


def _frontier_state(tmp_path: Path) -> dict[str, Any]:
    backend = make_backend(frontier_at(tmp_path), "demo", timeout=10.0)
    backend.open()
    try:
        counts = backend.counts()
        return {"status": counts.status, "done": counts.done, "queued": counts.queued, "seen": counts.seen,
                "leased": counts.leased_total, "failed": counts.failed, "nodes": sorted(backend.nodes())}
    finally:
        backend.close()


def test_job_start_of_a_crawl_with_a_live_node_is_refused_and_resets_nothing(tmp_path: Path) -> None:
    """A node of the crawl is alive (frozen mid-crawl, its heartbeat fresh) when `job start`'s run
    resets the frontier: refused (the job failed, saying why), the frontier as it was (its status not
    left ``resetting``, nothing deleted). The node, continued, finishes the crawl to the shop's truth."""
    with PostgresDatabase() as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        _started_again(tmp_path, db, shop)
        node = _node(tmp_path, db.url, shop.url)
        try:
            wait_for_pages(shop, 40)
            _freeze_between_writes(tmp_path, node, db.url)
            before = _frontier_state(tmp_path)
            ran = _cli(tmp_path, db.url, "worker", "--once", *TRUSTED)
            assert ran.returncode == 0, ran.stderr[-3000:]
            assert _frontier_state(tmp_path) == before and before["status"] == "running" and before["nodes"], before
            job = _job_row(db)
            assert job["status"] == "failed" and "live nodes" in job["last_error"], job
            assert job["reset_crawl"] is True, job  # `job start` again once the node is gone
            os.killpg(node.pid, signal.SIGCONT)
            assert node.wait(120) == 0
        finally:
            kill_group_if_running(node)
        _assert_crawl_matches_truth(tmp_path, db.url, shop.truth())


def test_a_crawl_that_cannot_reach_the_db_at_its_start_is_started_again_not_failed(tmp_path: Path) -> None:
    """The DB goes down between the worker's claim and its crawl's start: the crawl's start-up check
    finds it unreachable and exits 75 (EX_TEMPFAIL: nothing done). The worker waits and starts the crawl
    again once the DB is back: the job is done in one attempt, without an error, to the shop's truth.
    Before, the crawl exited 1 and the job failed (a person had to resume it)."""
    with PostgresDatabase(own_role=True) as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop, \
            open(tmp_path / "worker.log", "w") as log:
        _started_again(tmp_path, db, shop)
        worker = _worker(tmp_path, db.url, *POLL, log=log)
        try:
            _reset_during_an_outage(tmp_path, db, worker)
            said = _until("the crawl's start refused", lambda: _said(tmp_path, "could not reach a service"), 60)
            assert "cannot reach the product database" in said, said  # the crawl's own error line, in one
            time.sleep(1)
            db.let_in()
            job = _job_ended(tmp_path, db, 180)
        finally:
            _stop(worker)
        _assert_done(job, tmp_path, db, shop)


def test_a_crawl_that_cannot_reach_the_db_for_longer_than_the_worker_waits_fails_saying_why(tmp_path: Path) -> None:
    """As above, with the DB down for longer than ``RECORDHOUND_WORKER_UNAVAILABLE_SECONDS`` (1 s here):
    the job fails, its ``last_error`` the crawl's own error line (before: "exited with code 1" and a log
    without the reason, the crawl's stderr discarded); `job resume` then completes it to the shop's truth."""
    with PostgresDatabase(own_role=True) as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop, \
            open(tmp_path / "worker.log", "w") as log:
        _started_again(tmp_path, db, shop)
        worker = _worker(tmp_path, db.url, *POLL, "-s", "RECORDHOUND_WORKER_UNAVAILABLE_SECONDS=1", log=log)
        try:
            _reset_during_an_outage(tmp_path, db, worker)
            _until("the job failed", lambda: _said(tmp_path, " failed: the crawl exited with code 75"), 60)
            db.let_in()
            job = _until("the failure recorded", lambda: (j := _job_row(db))["status"] != "running" and j, 30)
            assert job["status"] == "failed", job
            assert job["last_error"].startswith("JobFailed: the crawl exited with code 75: cannot reach the product "
                                                "database at DATABASE_URL="), job
            job = _resumed_to_its_end(tmp_path, db)
        finally:
            _stop(worker)
        _assert_done(job, tmp_path, db, shop, attempt=2)  # resumed, not reset


def _said(tmp_path: Path, words: str) -> str:
    """The worker's log line holding ``words`` ("": none yet)."""
    return next((line for line in (tmp_path / "worker.log").read_text().splitlines() if words in line), "")


@pytest.mark.parametrize("how", ["one SIGTERM", "two SIGTERMs", "one SIGTERM, the user's stats file", "SIGKILL"])
def test_a_crawl_stopped_from_outside_the_worker_is_not_recorded_done(how: str, tmp_path: Path) -> None:
    """A SIGTERM to the crawl alone (an administrator's kill, a service manager), not through the job: the
    crawl stops gracefully and exits 0 with pages left. The job fails saying so (before: recorded done with
    a third of the shop fetched); `job resume` goes on from the frontier to the shop's truth. Also when a
    second SIGTERM forces the stop (the crawl leaves before writing its stats: a review found it done),
    and when the worker is given a stats file of the user's (``-s RECORDHOUND_STATS_FILE``: read there).
    A crawl a signal ended (a SIGKILL; a second SIGTERM that came as it was exiting, which CI met) says the
    same with the signal's name; before, "exited with code -9"."""
    own = ("-s", f"RECORDHOUND_STATS_FILE={tmp_path / 'mine.json'}") if "user" in how else ()
    with PostgresDatabase() as db, ShopProcess(RELEASES, seed=SEED, throttle=THROTTLE) as shop:
        assert _cli(tmp_path, db.url, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        worker = _worker(tmp_path, db.url, *POLL, *own)
        try:
            wait_for_pages(shop, 40)
            [crawl] = _until("the crawl", lambda: children_of(worker.pid))
            os.kill(crawl, signal.SIGKILL if how == "SIGKILL" else signal.SIGTERM)
            if how == "two SIGTERMs":
                time.sleep(0.3)
                os.kill(crawl, signal.SIGTERM)
            job = _job_ended(tmp_path, db, 120)
            assert job["status"] == "failed" and "pages left to fetch" in job["last_error"], job
            if own:
                assert json.loads((tmp_path / "mine.json").read_text())["stats"]["finish_reason"] == "shutdown"
            job = _resumed_to_its_end(tmp_path, db)
        finally:
            _stop(worker)
        _assert_done(job, tmp_path, db, shop, attempt=2)


def test_a_crawl_a_closespider_limit_ended_is_done_not_stopped_from_outside(tmp_path: Path) -> None:
    """A crawl ended by a ``CLOSESPIDER_*`` limit leaves pages, as asked: its job is done (the stop-from-outside
    check reads the crawl's finish reason; a review found it failing every such job)."""
    with PostgresDatabase() as db, ShopProcess(RELEASES, seed=SEED) as shop:
        assert _cli(tmp_path, db.url, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        ran = _cli(tmp_path, db.url, "worker", "--once", *TRUSTED, "-s", "CLOSESPIDER_PAGECOUNT=20")
        assert ran.returncode == 0, ran.stderr[-3000:]
        [job] = _jobs(tmp_path, db.url)
        assert (job["status"], job["last_error"]) == ("done", None), job
        assert shop.pages_served() < len(shop.truth()["offers"]), shop.pages_served()  # it did stop early
