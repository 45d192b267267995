"""Jobs (``job:parse_source:N``) kept in their source's row: ``sources.metadata["job"]``.

A job parses one source, so the source's id is the job's id and its JSON metadata already holds
the import's resume state (``last_parsed_line``...). No new table: the job survives a restart of
the admin and of the worker because it is in the product database; every change is one
transaction under the database's write lock, so a claim is a compare-and-set.

The job document::

    type: crawl | import       profile: the profile's path     file: the import's file
    base_url: another copy of the shop (crawl)   status: see ``states``   attempts: runs taken
    last_error   progress: {done, total, unit: pages | lines}
    worker: "host:pid"   heartbeat, created_at, started_at, first_page_at, finished_at: Unix times
    schedule: {every_hours, follow}   next_run_at: when a scheduled job is queued again
    external: the scrapyd job id of a crawl run there
    restart: an import reads from its first line (a new job, or ``job start``)
    reset_crawl: a crawl's frontier is reset before it runs (``job start``; a new crawl job goes on with the
        source's crawl, its recrawl schedule kept, as ``scrapy crawl`` does)
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, select, update

from recordhound.db.engine import lock_for_writing
from recordhound.db.models import Source
from recordhound.db.sources import ensure_source
from recordhound.exceptions import RecordhoundError
from recordhound.jobs import states

KEY = "job"


class JobError(RecordhoundError):
    """A job that does not exist, or cannot do what was asked in its state."""


@dataclass(frozen=True)
class Job:
    id: int
    source: str
    doc: dict[str, Any]

    @property
    def status(self) -> str:
        return str(self.doc.get("status") or states.QUEUED)

    @property
    def name(self) -> str:
        return f"job:parse_source:{self.id}"


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def create(engine: Engine, name: str, kind: str, location: str, doc: dict[str, Any]) -> Job:
    """Create (or replace the finished job of) source ``name``; the job is queued."""
    source_id = ensure_source(engine, name, kind, location)
    now = time.time()

    def change(job: dict[str, Any]) -> dict[str, Any]:
        if job and job.get("status") in states.HELD:
            raise JobError(f"job:parse_source:{source_id} ({name}) is {job['status']}: stop it first")
        return {"attempts": 0, "last_error": None, "progress": {"done": 0, "total": None},
                "schedule": {"every_hours": None, "follow": False}, **doc,
                "status": states.QUEUED, "created_at": now, "next_run_at": None,
                "restart": True}  # a new job (a new upload under the same name): from its first line

    return _change(engine, source_id, change)


def get(engine: Engine, job_id: int) -> Job:
    with engine.connect() as conn:
        row = conn.execute(select(Source.name, Source.meta.label("meta")).where(Source.id == job_id)).first()
    if row is None or not (row.meta or {}).get(KEY):
        raise JobError(f"no job job:parse_source:{job_id}; see `recordhound job list`")
    return Job(job_id, row.name, dict(row.meta[KEY]))


def all_jobs(engine: Engine) -> list[Job]:
    with engine.connect() as conn:
        rows = conn.execute(select(Source.id, Source.name, Source.meta.label("meta")).order_by(Source.id)).all()
    return [Job(r.id, r.name, dict(r.meta[KEY])) for r in rows if (r.meta or {}).get(KEY)]


def update_job(engine: Engine, job_id: int, changes: dict[str, Any], worker: str | None = None) -> Job:
    """Merge ``changes``; with ``worker``, only while that worker holds the job (else JobError)."""
    def change(job: dict[str, Any]) -> dict[str, Any]:
        if worker is not None:
            _check_held(job, job_id, worker)
        return {**job, **changes}

    return _change(engine, job_id, change)


def _check_held(job: dict[str, Any], job_id: int, worker: str) -> None:
    if job.get("worker") != worker or job.get("status") not in states.HELD:
        raise JobError(f"job:parse_source:{job_id} is no longer held by {worker}")


def end_run(engine: Engine, job_id: int, worker: str, status: str, changes: dict[str, Any]) -> Job:
    """A run's end, written by the worker that holds the job (else JobError). A person's stop made
    meanwhile (the job reads ``stopping``) stands over a run given back (``queued``) or failed: the job
    ends ``stopped``, with no next run. Decided in the write's own transaction, not from an earlier read."""
    def change(job: dict[str, Any]) -> dict[str, Any]:
        _check_held(job, job_id, worker)
        if job.get("status") == states.STOPPING and status in (states.QUEUED, states.FAILED):
            return {**job, **changes, "status": states.STOPPED, "next_run_at": None}
        return {**job, **changes, "status": status}

    return _change(engine, job_id, change)


def request(engine: Engine, job_id: int, action: str) -> Job:
    """A person's start / stop / resume."""
    def change(job: dict[str, Any]) -> dict[str, Any]:
        status = job.get("status")
        if action == "stop" and stoppable(job):  # a schedule waiting ends; resume runs the job and it goes on
            return {**job, "next_run_at": None,
                    "status": states.STOPPING if status == states.RUNNING else states.STOPPED}
        if action in ("start", "resume") and status in states.STARTABLE:
            return {**job, "status": states.QUEUED, "next_run_at": None, "restart": action == "start",
                    "reset_crawl": action == "start"}  # a crawl from a reset frontier (an import: ``restart``)
        raise JobError(f"job:parse_source:{job_id} is {status}: it cannot {action} now")

    return _change(engine, job_id, change)


def stoppable(job: dict[str, Any]) -> bool:
    """Queued, running, or waiting for its schedule to come due (done or failed, its next run set)."""
    status = job.get("status")
    return status in states.STOPPABLE or (status in states.RUN_ENDS and bool(job.get("next_run_at")))


def claim(engine: Engine, worker: str, lease_seconds: float, alive: Callable[[str], bool],
          stops_external: bool = False) -> Job | None:
    """Take the first job to run: queued, a schedule come due, or held by a worker that is gone
    (its heartbeat is older than ``lease_seconds``, or ``alive`` says its process is not). A job being
    stopped whose worker is gone is stopped, not taken; but one whose crawl ran on scrapyd is taken
    ``stopping`` by a worker that reaches scrapyd (``stops_external``), to cancel it there first."""
    now = time.time()
    with engine.begin() as conn:
        lock_for_writing(conn)
        for row in conn.execute(select(Source.id, Source.name, Source.meta.label("meta")).order_by(Source.id)):
            source_id, name, meta = int(row.id), str(row.name), dict(row.meta or {})
            job = dict(meta.get(KEY) or {})
            if not job or not _runnable(job, now, lease_seconds, alive):
                continue
            if job.get("status") == states.STOPPING and stops_external and job.get("external"):
                taken = {**job, "worker": worker, "heartbeat": now, "taken_over": job.get("worker")}
                _write(conn, source_id, meta, taken)  # its crawl may still run on scrapyd: cancelled there
                return Job(source_id, name, taken)
            if job.get("status") == states.STOPPING:  # its worker went before it could end it: a person's
                _write(conn, source_id, meta, {**job, "status": states.STOPPED, "finished_at": now, "pid": None})
                continue  # stop stands (before, the next worker took the job over and ran it on)
            taken = {**job, "status": states.RUNNING, "worker": worker, "heartbeat": now, "started_at": now,
                     "next_run_at": None,
                     "attempts": int(job.get("attempts") or 0) + 1, "first_page_at": None, "finished_at": None,
                     "taken_over": job.get("worker") if job.get("status") in states.HELD else None}
            _write(conn, source_id, meta, taken)
            return Job(source_id, name, taken)
    return None


def _runnable(job: dict[str, Any], now: float, lease_seconds: float, alive: Callable[[str], bool]) -> bool:
    status = job.get("status")
    if status == states.QUEUED:
        return True
    if status in states.RUN_ENDS:  # a scheduled job comes due again, also after a run that failed
        due = float(job.get("next_run_at") or 0)  # a failed run's own next run is set after it ended; one set
        stale = status == states.FAILED and due <= float(job.get("finished_at") or 0)  # before it (older code) is not
        return 0 < due <= now and not stale
    if status in states.HELD:
        stale = now - float(job.get("heartbeat") or 0) > lease_seconds
        return stale or not alive(str(job.get("worker") or ""))
    return False


def _change(engine: Engine, job_id: int, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Job:
    with engine.begin() as conn:
        lock_for_writing(conn)
        row = conn.execute(select(Source.name, Source.meta.label("meta")).where(Source.id == job_id)).first()
        if row is None:
            raise JobError(f"no source {job_id}")
        job = change(dict((row.meta or {}).get(KEY) or {}))
        _write(conn, job_id, dict(row.meta or {}), job)
        return Job(job_id, row.name, job)


def _write(conn: Connection, source_id: int, meta: dict[str, Any], job: dict[str, Any]) -> None:
    meta[KEY] = job
    conn.execute(update(Source).where(Source.id == source_id).values(meta=meta))
