"""The job store's rules on a SQLite file: claims, take-overs, schedules, start/stop/resume."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import Engine

from recordhound.db.migrate import open_database
from recordhound.jobs import states, store


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return open_database(f"sqlite:///{tmp_path / 'product.sqlite3'}")


def _job(engine: Engine, name: str = "shop") -> store.Job:
    return store.create(engine, name, "html", "http://shop/", {"type": states.CRAWL, "profile": name})


def test_a_queued_job_is_claimed_once_with_an_attempt_counted(engine: Engine) -> None:
    job = _job(engine)
    assert (job.status, job.name) == (states.QUEUED, f"job:parse_source:{job.id}")
    taken = store.claim(engine, "h:1", 30, lambda _: True)
    assert taken is not None and taken.doc["attempts"] == 1 and taken.doc["worker"] == "h:1"
    assert store.claim(engine, "h:2", 30, lambda _: True) is None  # held, heartbeat fresh, worker alive


def test_a_job_of_a_dead_or_silent_worker_is_taken_over(engine: Engine) -> None:
    _job(engine)
    store.claim(engine, "h:1", 30, lambda _: True)
    taken = store.claim(engine, "h:2", 30, lambda worker: worker != "h:1")  # its process is gone
    assert taken is not None and taken.doc["attempts"] == 2 and taken.doc["taken_over"] == "h:1"
    store.update_job(engine, taken.id, {"heartbeat": time.time() - 60}, "h:2")
    again = store.claim(engine, "h:3", 30, lambda _: True)  # alive, but silent past the lease
    assert again is not None and again.doc["worker"] == "h:3"
    with pytest.raises(store.JobError, match="no longer held by h:2"):
        store.update_job(engine, taken.id, {"progress": {"done": 1}}, "h:2")  # the old holder is fenced off


def test_a_stopping_job_whose_worker_is_gone_ends_stopped_not_run_again(engine: Engine) -> None:
    """A person stopped the job and its worker died before it could end it: the next worker does not
    take it over and run it on (before, the person's stop was lost); it ends stopped, for `job resume`."""
    job = _job(engine)
    store.claim(engine, "h:1", 30, lambda _: True)
    assert store.request(engine, job.id, "stop").status == states.STOPPING
    assert store.claim(engine, "h:2", 30, lambda worker: worker != "h:1") is None
    stopped = store.get(engine, job.id)
    assert stopped.status == states.STOPPED and stopped.doc["finished_at"]
    assert store.request(engine, job.id, "resume").status == states.QUEUED
    taken = store.claim(engine, "h:2", 30, lambda _: True)
    assert taken is not None and taken.id == job.id and taken.doc["attempts"] == 2


def test_a_stopping_job_whose_crawl_ran_on_scrapyd_is_taken_stopping_only_by_a_worker_that_reaches_scrapyd(
        engine: Engine) -> None:
    """Its crawl may outlive its dead worker on scrapyd: a worker with a scrapyd target takes the job,
    still stopping (to cancel that crawl first), without counting an attempt; a worker without one
    cannot, and leaves it as before (stopped)."""
    job = _job(engine)
    store.claim(engine, "h:1", 30, lambda _: True)
    store.update_job(engine, job.id, {"external": "shop--job1-1"}, "h:1")
    assert store.request(engine, job.id, "stop").status == states.STOPPING
    taken = store.claim(engine, "h:2", 30, lambda worker: worker != "h:1", stops_external=True)
    assert taken is not None and taken.status == states.STOPPING, taken
    assert (taken.doc["worker"], taken.doc["taken_over"], taken.doc["attempts"]) == ("h:2", "h:1", 1)
    assert store.claim(engine, "h:3", 30, lambda worker: worker != "h:1") is None  # h:2 holds it now
    assert store.claim(engine, "h:3", 30, lambda _: False) is None  # h:2 gone too, h:3 without scrapyd
    assert store.get(engine, job.id).status == states.STOPPED


def test_stop_resume_start_and_a_schedule_coming_due(engine: Engine) -> None:
    job = _job(engine)
    assert store.request(engine, job.id, "stop").status == states.STOPPED  # queued: stopped at once
    with pytest.raises(store.JobError, match="cannot stop"):
        store.request(engine, job.id, "stop")
    assert store.request(engine, job.id, "resume").status == states.QUEUED
    store.claim(engine, "h:1", 30, lambda _: True)
    assert store.request(engine, job.id, "stop").status == states.STOPPING  # its worker stops it
    store.update_job(engine, job.id, {"status": states.DONE, "next_run_at": time.time() + 3600}, "h:1")
    assert store.claim(engine, "h:1", 30, lambda _: True) is None  # not due yet
    store.update_job(engine, job.id, {"next_run_at": time.time() - 1})
    assert store.claim(engine, "h:1", 30, lambda _: True) is not None  # due: runs again
    with pytest.raises(store.JobError, match="stop it first"):
        _job(engine)  # a held job is not replaced


def test_a_new_job_over_a_source_whose_import_failed_mid_file_starts_at_its_first_line(engine: Engine) -> None:
    """A corrected file uploaded under the same name is a new job: it must not resume at the line
    the earlier file's import failed on (only "resume" of the same job does)."""
    first = store.create(engine, "upload", "csv", "/uploads/upload.csv", {"type": states.IMPORT, "profile": "upload"})
    taken = store.claim(engine, "h:1", 30, lambda _: True)
    assert taken is not None and taken.doc["restart"] is True
    store.update_job(engine, taken.id, {"restart": False}, "h:1")  # the run started: its resume point counts now
    store.update_job(engine, taken.id, {"status": states.FAILED, "last_error": "line 6: no title"}, "h:1")
    again = store.create(engine, "upload", "csv", "/uploads/upload.csv", {"type": states.IMPORT, "profile": "upload"})
    assert again.id == first.id and again.doc["restart"] is True
    store.request(engine, again.id, "stop")
    assert store.request(engine, again.id, "resume").doc["restart"] is False  # resume: where it was


def test_a_worker_stopped_while_its_job_is_being_stopped_leaves_it_stopped(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker itself is stopped (Ctrl-C, SIGTERM) while a person's stop of its job is under way: the
    job ends stopped (before, the worker put it back in the queue and the next worker ran it on); a
    running job it was stopped in goes back to the queue, as before."""
    from scrapy.settings import Settings

    from recordhound import settings as project_settings
    from recordhound.jobs.config import WorkerConfig
    from recordhound.jobs.worker import Worker

    settings = Settings({name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()})
    worker = Worker(engine, settings, WorkerConfig.from_settings(settings), [])

    def interrupted(job: store.Job, unwritten: dict[str, object]) -> str:
        raise KeyboardInterrupt  # the worker's own stop, out of the running job
    monkeypatch.setattr(worker, "_run", interrupted)
    for stop_first, ends in ((True, states.STOPPED), (False, states.QUEUED)):
        job = _job(engine, f"shop-{stop_first}")
        taken = store.claim(engine, worker.id, 30, lambda _: True)
        assert taken is not None and taken.id == job.id
        if stop_first:
            store.request(engine, job.id, "stop")
        with pytest.raises(KeyboardInterrupt):
            worker.run_job(taken)
        assert store.get(engine, job.id).status == ends


def test_only_job_start_asks_a_crawl_s_frontier_reset(engine: Engine) -> None:
    """``reset_crawl`` is set by `job start` alone: a new crawl job, a resume, and every job document
    written before the flag existed (``restart: True`` from its creation) go on with the source's crawl."""
    job = _job(engine)
    assert job.doc["restart"] is True and "reset_crawl" not in job.doc  # as documents written before
    store.claim(engine, "h:1", 30, lambda _: True)
    store.update_job(engine, job.id, {"status": states.STOPPED}, "h:1")
    assert store.request(engine, job.id, "resume").doc["reset_crawl"] is False
    store.claim(engine, "h:1", 30, lambda _: True)
    store.update_job(engine, job.id, {"status": states.STOPPED}, "h:1")
    assert store.request(engine, job.id, "start").doc["reset_crawl"] is True
