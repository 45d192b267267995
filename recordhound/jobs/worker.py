"""`recordhound worker`: takes jobs one at a time and runs them, writing a heartbeat and progress.

Several workers may run (on one machine or many): a job is claimed in one transaction. A worker
killed with SIGKILL leaves its job ``running`` with a heartbeat that stops moving; the next worker
takes it over once the heartbeat is ``RECORDHOUND_WORKER_LEASE_SECONDS`` old, or at once when the
dead worker was on its own host. An import then resumes at the line after the last committed
batch (the importer's ``last_parsed_line``), a crawl at the frontier's state.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from typing import Any

from scrapy.settings import BaseSettings
from sqlalchemy import Engine

from recordhound import failpoints
from recordhound.backoff import backoff_seconds
from recordhound.catalog.errors import is_transient
from recordhound.exceptions import RecordhoundError, Unavailable, first_line
from recordhound.jobs import runners, scrapyd_runs, states, store
from recordhound.jobs.config import WorkerConfig

logger = logging.getLogger(__name__)
OUTAGE_CAP_SECONDS = 10.0  # the longest wait between two tries of a job store (the product DB) that is down


def process_alive(worker: str) -> bool:
    """Whether ``host:pid`` is alive (a worker of another host: assumed so, its heartbeat decides)."""
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Worker:
    def __init__(self, engine: Engine, settings: BaseSettings, config: WorkerConfig,
                 overrides: list[tuple[str, str]]) -> None:
        self.engine, self.settings, self.config, self.overrides = engine, settings, config, overrides
        self.id = store.worker_id()
        self.stopping = False
        self.recording = False  # the run's end is being recorded: a first stop waits for it (``_stop``)
        self.ran = 0

    def run(self, once: bool = False) -> int:
        """Run jobs until SIGTERM/SIGINT/SIGHUP (``once``: until none is waiting); returns how many ran.
        A closed terminal (SIGHUP) stops the worker and its crawl as a Ctrl-C does (the crawl, in a
        session of its own, does not get the terminal's hang-up), unless the worker runs under nohup."""
        stop_on_signals(self._stop)
        logger.info("Worker %s started", self.id)
        down = 0  # tries of the job store that failed in a row
        while not self.stopping:
            try:
                job = store.claim(self.engine, self.id, self.config.lease_seconds, process_alive,
                                  stops_external=bool(self.config.scrapyd_target))
            except Exception as exc:
                if not is_transient(exc):
                    raise
                down += 1
                time.sleep(_unreachable(exc, down, "waiting for a job"))
                continue
            down = 0
            if job is None:
                if once:
                    break
                time.sleep(self.config.poll_seconds)
                continue
            self.run_job(job)
            self.ran += 1
        return self.ran

    def _stop(self, _signum: int, _frame: Any) -> None:
        """Out of a running job (its run returns the job to the queue). While a run's end is recorded, the
        first stop waits for it (then the worker stops); a second one does not (the store may hold the
        recording for long: its write lock, an outage), and the next worker takes the job over."""
        if self.recording and not self.stopping:
            self.stopping = True
            return
        self.stopping = True
        raise KeyboardInterrupt

    def run_job(self, job: store.Job) -> None:
        if job.doc.get("taken_over"):
            logger.warning("%s: taken over from %s (gone); attempt %d", job.name, job.doc["taken_over"],
                           job.doc["attempts"])
        logger.info("%s (%s %s): running", job.name, job.doc.get("type"), job.source)
        unwritten: dict[str, Any] = {}  # what the run's beats could not write (the job store down)
        self.recording = False  # (a run that ended without recording its end, a JobError, left it set)
        try:
            outcome = self._run(job, unwritten)
        except KeyboardInterrupt:  # the worker's own stop (or a Ctrl-C): the next worker resumes the job,
            self.stopping = True  # unless a person was stopping it (then it ends stopped)
            self._end(job, states.QUEUED, None, unwritten)
            raise
        except store.JobError as exc:
            logger.warning("%s: %s", job.name, exc)
            return
        except Exception as exc:  # noqa: BLE001 - any failure of a run is the job's last error
            if isinstance(exc, RecordhoundError):  # a missing file, an invalid profile: one line says it
                logger.error("%s failed: %s", job.name, first_line(exc))
            else:
                logger.exception("%s failed", job.name)
            if job.status == states.STOPPING:  # taken to cancel its crawl on scrapyd, which failed: left held,
                logger.warning("%s: its crawl is not known to be stopped; tried again once its heartbeat is "
                               "%g s old", job.name, self.config.lease_seconds)  # for a worker to try again
                return
            self._end(job, states.FAILED, f"{type(exc).__name__}: {first_line(exc)}", unwritten)
            return
        self._end(job, outcome, None, unwritten)

    def _run(self, job: store.Job, unwritten: dict[str, Any]) -> str:
        status, down = job.status, 0

        def beat(changes: dict[str, Any]) -> str:
            """The job's progress and heartbeat written; its status now. The job store down: the run goes
            on (its status as last read), and what was not written is written with the next beat, or with
            the run's end (``unwritten``)."""
            nonlocal status, down
            unwritten.update(changes)
            try:
                status = store.update_job(self.engine, job.id, {**unwritten, "heartbeat": time.time()},
                                          self.id).status
            except Exception as exc:
                if not is_transient(exc):
                    raise
                down += 1
                if down == 1 or down % 20 == 0:  # a beat each poll: not a line each
                    _unreachable(exc, down, f"{job.name} runs on")
            else:
                down = 0
                unwritten.clear()
            return status

        if job.doc.get("type") == states.IMPORT:
            return runners.run_import(job, self.settings, self.config, beat)
        if self.config.scrapyd_target:
            return scrapyd_runs.run_scrapyd(job, self.settings, self.config, beat, self.overrides)
        return runners.run_crawl(job, self.settings, self.config, beat, self.overrides, self._exited)

    def _exited(self) -> None:
        """The run's crawl has exited: a first stop from here on waits for its end to be recorded (before, a
        stop while its last counts were written gave a finished crawl back queued, to be crawled again)."""
        self.recording = True

    def _end(self, job: store.Job, status: str, error: str | None, unwritten: dict[str, Any]) -> None:
        """Record how the run ended; a stop that comes meanwhile takes effect once it is recorded (before,
        a SIGTERM here left a finished run ``running``, for a worker to take over and run again). A
        scheduled job (``every_hours``) comes due again after a run that ended done or failed (one failed
        run does not end its schedule). The job store down: tried again until it is back, unless the
        worker is stopping (then the next worker takes the job over)."""
        self.recording = True
        try:
            failpoints.hit("jobs.run_ended")
            every = (job.doc.get("schedule") or {}).get("every_hours")
            now = time.time()
            changes: dict[str, Any] = {**unwritten, "finished_at": now, "pid": None, "next_run_at": now + float(
                every) * 3600 if every and status in states.RUN_ENDS else None}
            if error is not None:
                changes["last_error"] = error
            status = self._record_end(job, status, changes)
        finally:
            self.recording = False
        logger.info("%s: %s%s", job.name, status, f" ({error})" if error else "")

    def _record_end(self, job: store.Job, status: str, changes: dict[str, Any]) -> str:
        """The job's status once its run's end is recorded (a person's stop may have changed it)."""
        down = 0
        while True:
            try:
                return store.end_run(self.engine, job.id, self.id, status, changes).status
            except store.JobError as exc:
                logger.warning("%s: %s", job.name, exc)
                return status
            except Exception as exc:
                if not is_transient(exc):
                    raise
                if self.stopping:
                    logger.warning("%s ended %s, not recorded (the job store is unreachable: %s): the next worker "
                                   "takes it over", job.name, status, first_line(exc))
                    return status
                down += 1
                time.sleep(_unreachable(exc, down, f"{job.name} ended {status}"))


def stop_on_signals(handler: Any) -> None:
    """SIGTERM, and SIGINT and SIGHUP unless they are ignored (a background job's SIGINT, nohup's SIGHUP),
    call ``handler``."""
    signal.signal(signal.SIGTERM, handler)
    for signum in (signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, handler)


def open_once(url: str) -> Engine:
    """The product DB (where jobs live), its schema migrated. Down, or answering and refusing, is one
    :class:`RecordhoundError` (``Unavailable`` for the former), not the driver's traceback."""
    from sqlalchemy.exc import DBAPIError

    from recordhound.db.migrate import open_database
    from recordhound.preflight import SQLITE_OPENING, database_unreachable

    try:
        return open_database(url)
    except Exception as exc:  # (a schema newer than this code's is a RecordhoundError of its own: ``upgrade``)
        opening = isinstance(exc, DBAPIError) and any(words in str(exc) for words in SQLITE_OPENING)
        if not (opening if url.startswith("sqlite") else is_transient(exc)):
            raise  # (a migration that fails on SQLite is no "cannot reach": its own error)
        raise database_unreachable(url, exc) from exc


def open_job_store(url: str) -> Engine:
    """``open_once``; while the DB is down the worker waits, one line per try, as it does between jobs. One
    that answers and refuses (no such database, a wrong password, a SQLite file that does not open) is a
    user's error: one line, the worker does not start."""
    attempt = 0
    while True:
        try:
            return open_once(url)
        except Unavailable as exc:
            attempt += 1
            time.sleep(_unreachable(exc.__cause__ or exc, attempt, "starting"))


def _unreachable(exc: BaseException, attempt: int, doing: str) -> float:
    """Say that the job store (the product DB) is down, in one line; how long to wait before the next try."""
    delay = backoff_seconds(attempt, OUTAGE_CAP_SECONDS)
    logger.warning("The job store (product DB) is unreachable (%s): %s; tried again in %.1f s",
                   first_line(exc), doing, delay)
    return delay

