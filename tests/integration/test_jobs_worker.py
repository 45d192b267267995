"""Jobs and the worker as real processes: an import job's worker killed with SIGKILL mid-file is
taken over by the next worker, which resumes at the next line (the catalog then equals the demo's
truth, ids consecutive); stop and resume from the command line; a user error is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from recordhound.db.engine import PG_WRITE_LOCK
from recordhound.demo.catalog import Catalog
from recordhound.demo.process import ShopProcess
from recordhound.demo.truth import build_truth
from recordhound.jobs.orphans import LOOK_SECONDS
from tests.integration.crawlers import children_of, kill_group_if_running, process_state, wait_for_pages
from tests.integration.truthcheck import assert_ids_consecutive, assert_product_db_matches
from tests.services import TRUSTED, PostgresDatabase

RELEASES, SEED = 200, 12
STOP_SECONDS = 8  # the worker's stop time, in the tests that kill a worker while its crawl stops


@pytest.fixture
def database() -> Iterator[str]:
    with PostgresDatabase() as db:
        yield db.url


def _env(database_url: str, failpoints: str = "") -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": "", "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
            "RECORDHOUND_FAILPOINTS": failpoints}


def _cli(tmp_path: Path, database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recordhound", *args], cwd=tmp_path, env=_env(database_url),
                          capture_output=True, text=True, timeout=120)


def _jobs(tmp_path: Path, database_url: str) -> list[dict[str, Any]]:
    listed = _cli(tmp_path, database_url, "job", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)
    return found


def _export(tmp_path: Path, database_url: str) -> Path:
    exported = _cli(tmp_path, database_url, "demo-shop", "--releases", str(RELEASES), "--seed", str(SEED),
                    "--export", str(tmp_path / "export"))
    assert exported.returncode == 0, exported.stderr
    return tmp_path / "export" / "catalog.csv"


def _frozen(pid: int) -> bool:
    """The process stopped itself at a crash point (SIGSTOP: state T)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


@contextmanager
def _worker_frozen_at(tmp_path: Path, database: str, failpoint: str, *args: str,
                      timeout: float = 120) -> Iterator[subprocess.Popen[str]]:
    """A `recordhound worker` (its output in worker.log) once it stopped itself at ``failpoint``
    (``NAME=stop[@N]``); killed on the way out if it still runs."""
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115 - closed below
    worker = subprocess.Popen([sys.executable, "-m", "recordhound", "worker", *args, *TRUSTED], cwd=tmp_path,
                              env=_env(database, failpoint), stdout=log, stderr=log, text=True)
    try:
        deadline = time.monotonic() + timeout
        while not _frozen(worker.pid):
            assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.05)
        yield worker
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        log.close()


def _stopped_while_frozen(tmp_path: Path, worker: subprocess.Popen[str]) -> None:
    """A SIGTERM that reaches the frozen worker as it continues: it ends on its own, exit 0."""
    os.kill(worker.pid, signal.SIGTERM)  # pending while it is stopped
    os.kill(worker.pid, signal.SIGCONT)
    assert worker.wait(60) == 0, (tmp_path / "worker.log").read_text()[-3000:]


def test_a_worker_killed_mid_import_is_taken_over_and_the_import_resumes_at_the_next_line(
        tmp_path: Path, database: str) -> None:
    feed = _export(tmp_path, database)
    queued = _cli(tmp_path, database, "job", "import", "demo_feed", "--file", str(feed))
    assert queued.returncode == 0 and "queued" in queued.stdout, queued.stderr
    batch = ("-s", "RECORDHOUND_JOB_IMPORT_BATCH=40")
    with _worker_frozen_at(tmp_path, database, "import.after_commit=stop@3", *batch, timeout=60) as worker:
        os.kill(worker.pid, signal.SIGKILL)  # mid-file: batch 3 committed, its progress not written
        assert worker.wait(30) == -signal.SIGKILL
    [job] = _jobs(tmp_path, database)
    assert job["status"] == "running" and job["attempts"] == 1
    assert job["progress"]["done"] == 80 and job["progress"]["total"] == len(build_truth(Catalog(RELEASES, seed=SEED))["offers"])
    again = subprocess.run([sys.executable, "-m", "recordhound", "worker", "--once", *batch, *TRUSTED], cwd=tmp_path,
                           env=_env(database), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    [job] = _jobs(tmp_path, database)
    assert (job["status"], job["attempts"], job["last_error"]) == ("done", 2, None)
    assert job["progress"]["done"] == job["progress"]["total"]
    truth = build_truth(Catalog(RELEASES, seed=SEED))
    assert_product_db_matches(database, truth)
    assert_ids_consecutive(database)


def test_a_stop_that_comes_while_a_run_s_end_is_recorded_waits_for_it(tmp_path: Path, database: str) -> None:
    """The worker's import has run to its end and the worker freezes right before recording it (crash point
    ``jobs.run_ended``, SIGSTOP); a SIGTERM comes meanwhile (delivered as it continues). The end is recorded,
    then the worker stops: the job is done, not left running for the next worker to take over and run
    again (before, the stop raised inside the recording and the job stayed ``running``)."""
    feed = _export(tmp_path, database)
    assert _cli(tmp_path, database, "job", "import", "demo_feed", "--file", str(feed)).returncode == 0
    with _worker_frozen_at(tmp_path, database, "jobs.run_ended=stop") as worker:
        _stopped_while_frozen(tmp_path, worker)
    said = (tmp_path / "worker.log").read_text()
    assert "1 jobs run" in said and "Traceback" not in said, said[-3000:]
    [job] = _jobs(tmp_path, database)
    assert (job["status"], job["attempts"], job["last_error"]) == ("done", 1, None), job
    truth = build_truth(Catalog(RELEASES, seed=SEED))
    assert job["progress"]["done"] == job["progress"]["total"] == len(truth["offers"])
    assert_product_db_matches(database, truth)
    assert_ids_consecutive(database)


def test_a_stop_that_comes_once_a_crawl_exited_waits_for_the_run_s_end(tmp_path: Path, database: str) -> None:
    """A crawl job's crawl has exited and the worker freezes before writing its last counts (crash point
    ``jobs.crawl_exited``, SIGSTOP); a SIGTERM comes meanwhile. The run's end is recorded, then the worker
    stops: the job is done with the crawl's counts. Before, the stop gave the finished crawl back queued, for
    the next worker to crawl the shop again."""
    with ShopProcess(RELEASES, seed=SEED) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        with _worker_frozen_at(tmp_path, database, "jobs.crawl_exited=stop", timeout=240) as worker:
            _stopped_while_frozen(tmp_path, worker)
        assert_product_db_matches(database, shop.truth())
    said = (tmp_path / "worker.log").read_text()
    assert "1 jobs run" in said and "Traceback" not in said, said[-3000:]
    [job] = _jobs(tmp_path, database)
    assert (job["status"], job["attempts"], job["last_error"]) == ("done", 1, None), job
    assert job["progress"]["done"] == job["progress"]["total"] > RELEASES, job


def test_a_second_stop_ends_a_worker_whose_run_s_end_waits_for_the_write_lock(tmp_path: Path, database: str) -> None:
    """As above, with another session holding the product DB's write lock (a long batch, a stalled node's
    writer), so that the recording waits: the first SIGTERM waits for it, a second one ends the worker at
    once; the job is left to be taken over (before the review's fix, no stop ended the wait)."""
    feed = _export(tmp_path, database)
    assert _cli(tmp_path, database, "job", "import", "demo_feed", "--file", str(feed)).returncode == 0
    holder = create_engine(database, poolclass=NullPool).connect()
    try:
        with _worker_frozen_at(tmp_path, database, "jobs.run_ended=stop") as worker:
            holder.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_WRITE_LOCK})
            os.kill(worker.pid, signal.SIGTERM)
            os.kill(worker.pid, signal.SIGCONT)
            with pytest.raises(subprocess.TimeoutExpired):
                worker.wait(3)  # the first stop waits for the recording, which waits for the lock
            os.kill(worker.pid, signal.SIGTERM)
            assert worker.wait(30) == 0, (tmp_path / "worker.log").read_text()[-3000:]
    finally:
        holder.rollback()
        holder.close()
    [job] = _jobs(tmp_path, database)
    assert (job["status"], job["attempts"]) == ("running", 1), job  # the next worker takes it over


def test_stop_and_resume_a_queued_job_and_one_line_errors(tmp_path: Path, database: str) -> None:
    feed = _export(tmp_path, database)
    assert _cli(tmp_path, database, "job", "import", "demo_feed", "--file", str(feed)).returncode == 0
    [job] = _jobs(tmp_path, database)
    stopped = _cli(tmp_path, database, "job", "stop", str(job["id"]))
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    ran = _cli(tmp_path, database, "worker", "--once")
    assert ran.returncode == 0 and "0 jobs run" in ran.stderr  # a stopped job waits
    again = _cli(tmp_path, database, "job", "stop", str(job["id"]))
    assert again.returncode == 2 and again.stderr.strip() == f"error: job:parse_source:{job['id']} is stopped: it cannot stop now"
    missing = _cli(tmp_path, database, "job", "resume", "999")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no " in missing.stderr
    assert _cli(tmp_path, database, "job", "resume", str(job["id"])).returncode == 0
    assert _jobs(tmp_path, database)[0]["status"] == "queued"


def test_a_crawl_job_ends_with_the_frontier_s_final_counts_not_a_reading_from_the_middle(
        tmp_path: Path, database: str) -> None:
    """The worker looks at a running crawl every poll (here 30 s, longer than the crawl): it notices
    the end at once, and the job keeps the counts of the crawl's end (pages in hand count as to do)."""
    with ShopProcess(RELEASES, seed=SEED) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        ran = subprocess.run([sys.executable, "-m", "recordhound", "worker", "--once", *TRUSTED,
                              "-s", "RECORDHOUND_WORKER_POLL_SECONDS=30"], cwd=tmp_path, env=_env(database),
                             capture_output=True, text=True, timeout=300)
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert_product_db_matches(database, shop.truth())
    [job] = _jobs(tmp_path, database)
    status = _cli(tmp_path, database, "frontier", "status", "--source", "demo", "--json")
    assert status.returncode == 0, status.stderr
    [crawl] = json.loads(status.stdout)
    assert crawl["queued"] == 0 and crawl["done"] > RELEASES, crawl
    assert (job["status"], job["progress"]) == ("done", {"done": crawl["done"], "total": crawl["done"], "unit": "pages"})


def test_ctrl_c_at_a_worker_stops_its_crawl_once_gracefully_and_the_job_resumes(tmp_path: Path, database: str) -> None:
    """A terminal's Ctrl-C reaches the worker's whole process group. Before, the crawl (in the worker's
    group) took it as a first stop and the worker's SIGTERM as a second, forced one: no lease returned,
    the crawl's close cut short. The crawl now runs in a session of its own and gets one stop, from the
    worker: it returns its leases and ends as interrupted; the job waits, and a worker resumes it."""
    with ShopProcess(RELEASES, seed=SEED, throttle=("--latency", "0.1")) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        worker = subprocess.Popen([sys.executable, "-m", "recordhound", "worker", *TRUSTED], cwd=tmp_path,
                                  env=_env(database), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        try:
            wait_for_pages(shop, 40)
            os.killpg(worker.pid, signal.SIGINT)  # as a terminal does
            _, stderr = worker.communicate(timeout=120)
        finally:
            kill_group_if_running(worker)
        [job] = _jobs(tmp_path, database)
        assert job["status"] == "queued" and "Traceback" not in stderr, (job, stderr[-3000:])
        log = (tmp_path / ".recordhound" / "logs" / f"job-{job['id']}.log").read_text()
        assert "shutting down gracefully" in log and "forcing unclean shutdown" not in log, log[-3000:]
        assert "Frontier closed (shutdown)" in log, log[-3000:]  # its leases returned
        ran = _cli(tmp_path, database, "worker", "--once", *TRUSTED)
        assert ran.returncode == 0 and _jobs(tmp_path, database)[0]["status"] == "done", ran.stderr[-3000:]
        assert_product_db_matches(database, shop.truth())
        assert_ids_consecutive(database)


def test_a_worker_killed_takes_its_crawl_with_it_and_the_next_worker_resumes_the_job(tmp_path: Path,
                                                                                   database: str) -> None:
    """kill -9 of a worker running a crawl job. The crawl, in a session of its own, got no signal and
    ran on as an orphan (the job, taken over by the next worker, would have been crawled twice at
    once). It now sees its worker gone and stops as SIGTERM stops it: its leases returned, exit; the
    next worker takes the job over and completes it, the product DB matching the shop's truth."""
    with ShopProcess(RELEASES, seed=SEED, throttle=("--latency", "0.1")) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        worker = subprocess.Popen([sys.executable, "-m", "recordhound", "worker", *TRUSTED], cwd=tmp_path,
                                  env=_env(database), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        crawl: int | None = None
        try:
            wait_for_pages(shop, 40)
            crawl = children_of(worker.pid, "scrapy")[0]
            worker.kill()
            worker.wait(30)
            deadline = time.monotonic() + 30
            while process_state(crawl) not in (None, "Z"):
                assert time.monotonic() < deadline, "the crawl outlived its worker"
                time.sleep(0.1)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            if crawl is not None and process_state(crawl) not in (None, "Z"):
                os.kill(crawl, signal.SIGKILL)
        [job] = _jobs(tmp_path, database)
        log = (tmp_path / ".recordhound" / "logs" / f"job-{job['id']}.log").read_text()
        assert "Frontier closed (shutdown)" in log and "Traceback" not in log, log[-3000:]  # its leases returned
        ran = _cli(tmp_path, database, "worker", "--once", *TRUSTED)
        assert ran.returncode == 0 and _jobs(tmp_path, database)[0]["status"] == "done", ran.stderr[-3000:]
        assert "taken over" in ran.stderr, ran.stderr[-3000:]
        assert_product_db_matches(database, shop.truth())
        assert_ids_consecutive(database)


@pytest.mark.parametrize("writer_answers", [True, False], ids=["writer answers", "writer silent"])
def test_a_worker_killed_while_its_crawl_stops_lets_that_stop_run_its_course(
        writer_answers: bool, tmp_path: Path, database: str) -> None:
    """The job is stopped (the worker sends SIGTERM) and the crawl closes, its writer slow to record the
    crawl's end (frozen there); then the worker is killed. The crawl's stop is under way already: losing
    its worker must not turn it into a forced one (a second SIGTERM) at once; an orphan is forced only
    after the worker's stop time (the time a stopping worker gives its crawl). A writer that answers lets
    the close end as usual; one silent past that time is left. Either way the job stays stopped (the
    next worker does not run it on: the person's stop stands), and once resumed the next worker completes
    it, the product DB matching the shop's truth. The shop answers in 1 s: the stop (a CLI process,
    then the worker's next look) must land before the crawl's last page (at 0.1 s, and at 0.3 s on a loaded
    machine, once it did not)."""
    with ShopProcess(RELEASES, seed=SEED, throttle=("--latency", "1.0")) as shop:
        assert _cli(tmp_path, database, "job", "crawl", "demo", "--base-url", shop.url).returncode == 0
        [job] = _jobs(tmp_path, database)
        worker = subprocess.Popen([sys.executable, "-m", "recordhound", "worker", *TRUSTED,
                                   "-s", "RECORDHOUND_WORKER_POLL_SECONDS=0.2",
                                   "-s", f"RECORDHOUND_WORKER_STOP_SECONDS={STOP_SECONDS}"], cwd=tmp_path,
                                  env=_env(database, "store.end_recorded=stop"), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        crawl: int | None = None
        writer: int | None = None
        try:
            wait_for_pages(shop, 40)
            crawl = children_of(worker.pid, "scrapy")[0]
            assert _cli(tmp_path, database, "job", "stop", str(job["id"])).returncode == 0
            deadline = time.monotonic() + 60
            while writer is None:
                assert time.monotonic() < deadline, "the crawl's writer never reached the crawl's end"
                writer = next((pid for pid in children_of(crawl) if process_state(pid) == "T"), None)
                time.sleep(0.1)
            worker.kill()
            worker.wait(30)
            time.sleep(3 * LOOK_SECONDS)  # the crawl has seen its worker gone
            assert process_state(crawl) not in (None, "Z"), "a stop under way was forced when the worker went"
            if writer_answers:
                os.kill(writer, signal.SIGCONT)
            deadline = time.monotonic() + STOP_SECONDS + 30
            while process_state(crawl) not in (None, "Z"):
                assert time.monotonic() < deadline, "the crawl did not leave (its close, or its forced stop)"
                time.sleep(0.1)
        finally:
            if crawl is not None and process_state(crawl) not in (None, "Z"):
                os.killpg(crawl, signal.SIGKILL)  # the crawl leads a session of its own, its writer in it
            if writer is not None and process_state(writer) not in (None, "Z"):
                os.kill(writer, signal.SIGKILL)
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        log = (tmp_path / ".recordhound" / "logs" / f"job-{job['id']}.log").read_text()
        assert "Traceback" not in log, log[-3000:]
        if writer_answers:
            assert "Frontier closed (shutdown)" in log, log[-3000:]
            assert "forcing unclean shutdown" not in log and "leaving without waiting" not in log, log[-3000:]
        else:
            assert "leaving without waiting for the store's writer" in log, log[-3000:]
        ran = _cli(tmp_path, database, "worker", "--once", *TRUSTED)
        assert ran.returncode == 0 and _jobs(tmp_path, database)[0]["status"] == "stopped", ran.stderr[-3000:]
        assert _cli(tmp_path, database, "job", "resume", str(job["id"])).returncode == 0
        ran = _cli(tmp_path, database, "worker", "--once", *TRUSTED)
        assert ran.returncode == 0 and _jobs(tmp_path, database)[0]["status"] == "done", ran.stderr[-3000:]
        assert_product_db_matches(database, shop.truth())
        assert_ids_consecutive(database)
