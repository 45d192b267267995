"""How a worker's run of a job ends, on a SQLite product DB with a real import: a scheduled job comes due
again after a run that failed, and a schedule waiting for its next run can be stopped; an import records
when its first batch was in; a user error (a file gone) is one line in the job and in the worker's log."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings
from sqlalchemy import Engine

from recordhound.demo import feeds
from recordhound.demo.catalog import Catalog
from recordhound.jobs import create, states, store
from recordhound.jobs.config import WorkerConfig
from recordhound.jobs.worker import Worker


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.chdir(tmp_path)
    found = Settings()
    found.setmodule("recordhound.settings")
    found.setdict({"RECORDHOUND_DATABASE_URL": f"sqlite:///{tmp_path / 'product.sqlite3'}", "RECORDHOUND_REDIS_URL": "",
                   "RECORDHOUND_TRUST_NEW_ENTITIES": True, "RECORDHOUND_WORKER_POLL_SECONDS": 0.1})
    return found


@pytest.fixture
def engine(settings: Settings) -> Engine:
    from recordhound.config import StoreConfig
    from recordhound.db.migrate import open_database

    return open_database(StoreConfig.from_settings(settings).database_url)


def _worker(engine: Engine, settings: Settings) -> Worker:
    return Worker(engine, settings, WorkerConfig.from_settings(settings), [])


def test_a_scheduled_import_that_failed_comes_due_again_and_its_waiting_schedule_can_be_stopped(
        tmp_path: Path, settings: Settings, engine: Engine, caplog: pytest.LogCaptureFixture) -> None:
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(feeds.to_csv(Catalog(20, seed=3)))
    job = create.import_job(engine, settings, "demo_feed", str(feed), every_hours=1)
    os.remove(feed)  # gone when the run comes: the run fails
    with caplog.at_level(logging.INFO):
        assert _worker(engine, settings).run(once=True) == 1
    failed = store.get(engine, job.id)
    assert failed.status == states.FAILED and failed.doc["last_error"].startswith("SourceFileError: "), failed.doc
    assert "\n" not in failed.doc["last_error"] and str(feed) in failed.doc["last_error"]
    assert 3590 < failed.doc["next_run_at"] - time.time() <= 3600, failed.doc  # its schedule goes on
    told = [r for r in caplog.records if r.name == "recordhound.jobs.worker" and r.levelno >= logging.ERROR]
    assert [r.exc_info for r in told] == [None] and str(feed) in told[0].getMessage()  # one line, no traceback
    store.update_job(engine, job.id, {"next_run_at": failed.doc["finished_at"] + 0.01})
    time.sleep(0.05)
    assert store.claim(engine, "h:1", 30, lambda _: True) is not None  # came due: runs again
    store.update_job(engine, job.id, {"status": states.DONE, "next_run_at": time.time() + 3600}, "h:1")
    assert store.stoppable(store.get(engine, job.id).doc)
    stopped = store.request(engine, job.id, "stop")  # the schedule waiting: stopped
    assert (stopped.status, stopped.doc["next_run_at"]) == (states.STOPPED, None)
    assert store.claim(engine, "h:1", 30, lambda _: True) is None
    assert store.request(engine, job.id, "resume").status == states.QUEUED


def test_a_failed_job_whose_next_run_was_set_before_it_failed_is_not_run_again(settings: Settings,
                                                                                engine: Engine) -> None:
    """Job documents written before a failed run kept its schedule: the next run set by an earlier done
    run (in the past, before the failure) is stale; such a job waits for `job resume`, as it did."""
    job = create.crawl_job(engine, settings, "demo", every_hours=1)
    store.claim(engine, "h:1", 30, lambda _: True)
    now = time.time()
    store.update_job(engine, job.id, {"status": states.FAILED, "finished_at": now - 10, "next_run_at": now - 60}, "h:1")
    assert store.claim(engine, "h:2", 30, lambda _: True) is None


def test_an_import_job_records_when_its_first_batch_was_in(tmp_path: Path, settings: Settings,
                                                           engine: Engine) -> None:
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(feeds.to_csv(Catalog(30, seed=4)))
    job = create.import_job(engine, settings, "demo_feed", str(feed))
    assert _worker(engine, settings).run(once=True) == 1
    done = store.get(engine, job.id).doc
    assert done["status"] == states.DONE, done
    assert done["started_at"] <= done["first_page_at"] <= done["finished_at"], done


def test_a_run_that_fails_after_a_person_s_stop_ends_stopped_its_schedule_waiting_for_resume(
        tmp_path: Path, settings: Settings, engine: Engine) -> None:
    """A person stopped the scheduled job; its run then failed (here: its file gone; on scrapyd: the
    crawl ended as it was cancelled). The stop stands: stopped, no next run (before: failed, and the
    schedule ran it again), the error kept."""
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(feeds.to_csv(Catalog(20, seed=3)))
    create.import_job(engine, settings, "demo_feed", str(feed), every_hours=1)
    os.remove(feed)
    worker = _worker(engine, settings)
    claimed = store.claim(engine, worker.id, 30, lambda _: True)
    assert claimed is not None
    assert store.request(engine, claimed.id, "stop").status == states.STOPPING
    worker.run_job(claimed)
    ended = store.get(engine, claimed.id).doc
    assert (ended["status"], ended["next_run_at"]) == (states.STOPPED, None), ended
    assert ended["last_error"].startswith("SourceFileError: "), ended


def test_a_job_taken_to_cancel_its_scrapyd_crawl_stays_stopping_when_scrapyd_cannot_be_reached(
        tmp_path: Path, settings: Settings, engine: Engine) -> None:
    """Its worker died, a person stopped it; the next worker (a scrapyd target, here a port nobody
    listens on) cannot cancel the crawl there. The job is not marked stopped (nothing would try the
    cancel again while scrapyd may crawl on): it stays stopping, and is taken again once its heartbeat
    is older than the worker lease."""
    from tests.ports import free_port

    (tmp_path / "scrapy.cfg").write_text(f"[deploy:local]\nurl = http://127.0.0.1:{free_port()}\nproject = rh\n")
    settings.set("RECORDHOUND_JOB_SCRAPYD_TARGET", "local")
    job = create.crawl_job(engine, settings, "demo")
    store.claim(engine, "gone:1", 30, lambda _: True)
    store.update_job(engine, job.id, {"external": f"demo--job{job.id}-1"}, "gone:1")
    assert store.request(engine, job.id, "stop").status == states.STOPPING
    worker = _worker(engine, settings)
    taken = store.claim(engine, worker.id, 30, lambda holder: holder != "gone:1", stops_external=True)
    assert taken is not None and taken.status == states.STOPPING
    worker.run_job(taken)
    left = store.get(engine, job.id)
    assert (left.status, left.doc["worker"]) == (states.STOPPING, worker.id), left.doc
    store.update_job(engine, job.id, {"heartbeat": time.time() - 60})
    again = store.claim(engine, "h:2", 30, lambda _: True, stops_external=True)
    assert again is not None and again.status == states.STOPPING  # the cancel is tried again


def _scrapyd_where_crawls_end_at_once(tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The worker's scrapyd target: a stand-in on which each crawl scheduled has ended by the first look.
    Returns the list of the job ids scheduled on it."""
    scheduled: list[str] = []

    class EndsAtOnce:
        def __init__(self, _target: object) -> None: ...

        def jobs(self) -> dict[str, list[dict[str, str]]]:
            return {"pending": [], "running": [], "finished": [{"id": name} for name in scheduled]}

        def schedule(self, _spider: str, _nodes: int, _settings: object, _args: object,
                     job_ids: list[str]) -> list[str]:
            scheduled.extend(job_ids)
            return job_ids

    monkeypatch.setattr("recordhound.scrapyd_client.ScrapydClient", EndsAtOnce)
    (tmp_path / "scrapy.cfg").write_text("[deploy:local]\nurl = http://127.0.0.1:9\nproject = rh\n")
    settings.set("RECORDHOUND_JOB_SCRAPYD_TARGET", "local")
    return scheduled


def test_a_scrapyd_crawl_that_never_queued_its_start_requests_fails_the_run_saying_why(
        tmp_path: Path, settings: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """scrapyd says finished and the frontier was never seeded: the crawl failed as it started (scrapyd
    reports no exit code), or the worker and the crawl do not share the frontier. Either way not done:
    the run fails naming both (a review found "done" for a crawl that died at its start-up check)."""
    scheduled = _scrapyd_where_crawls_end_at_once(tmp_path, settings, monkeypatch)
    job = create.crawl_job(engine, settings, "demo")
    assert _worker(engine, settings).run(once=True) == 1
    failed = store.get(engine, job.id).doc
    assert failed["status"] == states.FAILED and scheduled == [f"demo--job{job.id}-1"], failed
    assert "never queued its start requests" in failed["last_error"], failed
    assert "does not see its frontier (crawl 'demo' in the frontier file" in failed["last_error"], failed


def test_a_scrapyd_crawl_that_finished_with_pages_left_fails_the_run_and_one_that_completed_is_done(
        tmp_path: Path, settings: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """scrapyd's "finished" says the crawl's process ended, not that the crawl completed (cancelled there, it
    returns its leases and ends): the frontier says that. Pages left: the run fails, one line saying how
    many (before: done); the frontier completed: done."""
    from recordhound.config import FrontierConfig
    from recordhound.frontier.backend import Entry
    from recordhound.frontier.factory import make_backend
    from recordhound.frontier.outside import crawl_name
    from recordhound.sources import load_profile

    scheduled = _scrapyd_where_crawls_end_at_once(tmp_path, settings, monkeypatch)
    config = FrontierConfig.from_settings(settings)
    frontier = make_backend(config, crawl_name(config, load_profile("demo", settings.getlist(
        "RECORDHOUND_PROFILES_DIRS"))))
    frontier.open()
    frontier.commit([Entry(bytes([n]) * 8, 0, f"page-{n}") for n in range(3)], [], [], seeded=True)
    frontier.set_status("running")
    job = create.crawl_job(engine, settings, "demo")
    assert _worker(engine, settings).run(once=True) == 1
    failed = store.get(engine, job.id).doc
    assert failed["status"] == states.FAILED and "\n" not in failed["last_error"], failed
    assert failed["last_error"].startswith(f"JobFailed: scrapyd job demo--job{job.id}-1 ended with 3 pages left "
                                           f"to fetch"), failed
    frontier.commit([], [lease.lease for lease in frontier.lease("n1", 3, 60)], [])
    frontier.set_status("completed")
    frontier.close()
    assert store.request(engine, job.id, "resume").status == states.QUEUED
    assert _worker(engine, settings).run(once=True) == 1
    done = store.get(engine, job.id).doc
    assert done["status"] == states.DONE and scheduled == [f"demo--job{job.id}-1", f"demo--job{job.id}-2"], done


def test_a_failed_run_s_error_line_is_its_own_not_an_earlier_run_s(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's log is appended to by every run: the error line given as a run's ``last_error`` is one
    that run wrote, never an earlier run's."""
    from types import SimpleNamespace

    from recordhound.jobs import runners

    monkeypatch.chdir(tmp_path)
    job: Any = SimpleNamespace(id=7)
    os.makedirs(runners.LOG_DIR)
    with open(runners._log_path(job), "w") as log:
        log.write("2026-12-07 INFO crawl 1\nerror: cannot reach Redis at REDIS_URL=redis://127.0.0.1:1/0: refused\n")
    logged = runners._logged(job)
    assert runners._said(job, 0) == "cannot reach Redis at REDIS_URL=redis://127.0.0.1:1/0: refused"
    with open(runners._log_path(job), "a") as log:
        log.write("2026-12-07 INFO crawl 2, killed\n")
    assert runners._said(job, logged) == ""  # the second run said nothing
    with open(runners._log_path(job), "a") as log:
        log.write("error: the crawl failed its health checks: 30 % of its requests failed\n")
    assert runners._said(job, logged) == "the crawl failed its health checks: 30 % of its requests failed"


def test_a_person_s_stop_that_ends_a_crawl_before_scrapy_took_sigterm_over_is_a_stop(
        tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """`job stop` while the crawl process is still starting (Python's default SIGTERM action: the worker's
    SIGTERM ends it, exit -15, holding nothing yet) is the job's stop. Before, that exit went on to the
    check for a crawl stopped from outside the worker, and the job failed saying so (a review found it).
    A real process and a real signal; the crawl command is a Python that sleeps."""
    from types import SimpleNamespace

    from recordhound.jobs import runners

    monkeypatch.setattr(runners, "crawl_command", lambda job, overrides: [sys.executable, "-c",
                                                                           "import time; time.sleep(60)"])
    os.makedirs(runners.LOG_DIR)
    job: Any = SimpleNamespace(id=9, name="job:9")
    pages: Any = SimpleNamespace(progress=lambda pid: {"pid": pid})
    started = time.monotonic()
    ended = runners._crawl_once(job, WorkerConfig.from_settings(settings), lambda changes: states.STOPPING, [], pages)
    assert ended == runners.STOPPED_CODE and time.monotonic() - started < 30
    assert runners._stopped_from_outside(-signal.SIGKILL, job, []) == "SIGKILL ended it"
    assert runners._stopped_from_outside(-signal.SIGSEGV, job, []) == ""  # a crash keeps its exit code and line
    assert runners._stopped_from_outside(runners.STOPPED_CODE, job, []) == ""
