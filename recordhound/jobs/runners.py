"""What a worker does with a job it holds: import a file, or crawl a shop (a local crawl process,
or a scrapyd job). Each run reports progress through ``beat``, which answers whether the job was
asked to stop; a run that returns normally is done or stopped, one that raises has failed."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from scrapy.settings import BaseSettings

from recordhound import failpoints
from recordhound.config import FrontierConfig
from recordhound.exceptions import RecordhoundError
from recordhound.jobs import orphans, states
from recordhound.jobs.config import WorkerConfig
from recordhound.jobs.store import Job
from recordhound.sources import load_profile

logger = logging.getLogger(__name__)
Beat = Callable[[dict[str, Any]], str]  # progress changes → the job's status now
LOG_DIR = os.path.join(".recordhound", "logs")
STOP_BEAT_SECONDS = 1.0  # while a crawl stops, the job's heartbeat is written this often


class JobFailed(RecordhoundError):
    """A run that ended badly; the message becomes the job's ``last_error``."""


def run_import(job: Job, settings: BaseSettings, config: WorkerConfig, beat: Beat) -> str:
    from recordhound.catalog.writer import open_writer
    from recordhound.config import ReviewConfig, StoreConfig
    from recordhound.db.migrate import open_database
    from recordhound.sources.importer import FileImport

    profile = load_profile(job.doc["profile"], settings.getlist("RECORDHOUND_PROFILES_DIRS"))
    store, review = StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings)
    engine = open_database(store.database_url)
    writer = open_writer(engine, store, review, trusted=profile.trusted or review.trust_new_entities)
    status = {"now": states.RUNNING}
    total, first = {"lines": 0}, {"line": 0}

    def progress(line: int) -> None:
        changes: dict[str, Any] = {"progress": {"done": line, "total": total["lines"], "unit": "lines"}}
        if first["line"] and line >= first["line"]:  # this run's first batch is in: its "first page"
            changes["first_page_at"], first["line"] = time.time(), 0
        status["now"] = beat(changes)

    run = FileImport(profile, job.doc.get("file") or profile.location, engine, writer, config.import_batch,
                     progress=progress, should_stop=lambda: status["now"] == states.STOPPING)
    source_id, first["line"], total["lines"] = run.prepare(restart=bool(job.doc.get("restart")))
    beat({"progress": {"done": first["line"] - 1, "total": total["lines"], "unit": "lines"}, "restart": False})
    result = run.run(source_id, first["line"], total["lines"])
    return states.STOPPED if result.stopped else states.DONE


def crawl_command(job: Job, overrides: list[tuple[str, str]]) -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", f"source={job.doc['profile']}",
               "-s", f"LOG_FILE={os.path.join(LOG_DIR, f'job-{job.id}.log')}", "-s", "RECORDHOUND_SUMMARY_ENABLED=false"]
    if job.doc.get("base_url"):
        command += ["-a", f"base_url={job.doc['base_url']}"]
    if (job.doc.get("schedule") or {}).get("follow"):
        command += ["-s", "RECORDHOUND_FOLLOW=true"]
    for name, value in overrides:
        command += ["-s", f"{name}={value}"]
    return command


def run_crawl(job: Job, settings: BaseSettings, config: WorkerConfig, beat: Beat,
              overrides: list[tuple[str, str]]) -> str:
    """A local crawl process; SIGTERM when asked to stop (it returns its leases: resumable). It runs in a
    session of its own: a terminal's Ctrl-C reaches the worker alone, which stops the crawl once (in the
    worker's process group, the crawl took that Ctrl-C as a first stop and the worker's SIGTERM as a
    second, forced one). A worker that dies (SIGKILL) takes its crawl with it (``orphans.py``)."""
    os.makedirs(LOG_DIR, exist_ok=True)
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": os.environ.get("SCRAPY_SETTINGS_MODULE", "recordhound.settings"),
           **orphans.env(config.stop_seconds)}
    pages = FramePages(job, settings)
    try:
        pages.restart_if_asked(beat)
    except BaseException:
        pages.close()
        raise
    process = subprocess.Popen(crawl_command(job, overrides), env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    stopping = False
    try:
        while process.poll() is None:
            status = beat(pages.progress(process.pid))
            if status == states.STOPPING and not stopping:
                stopping = True
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(config.poll_seconds)  # the crawl's end is noticed at once, not at the next look
            except subprocess.TimeoutExpired:
                pass
        beat(pages.progress(None))  # the counts of the crawl's end, not of the last look
    finally:
        if process.poll() is None:  # the worker itself is stopping: let the crawl return its leases
            _stop_crawl(process, config.stop_seconds, beat, signalled=stopping)
        pages.close()
    if process.returncode != 0:
        raise JobFailed(f"the crawl exited with code {process.returncode} (log: {LOG_DIR}/job-{job.id}.log)")
    return states.STOPPED if stopping else states.DONE


def _stop_crawl(process: subprocess.Popen[bytes], seconds: float, beat: Beat, signalled: bool = False) -> None:
    """SIGTERM (not again when a person's stop sent it already: a second one is Scrapy's forced stop),
    then SIGKILL after ``seconds``: the worker's own stop is never replaced by a timeout, and no crawl
    outlives its worker (a killed node's leases expire and return). The job's heartbeat is written
    while the crawl closes (a close may outlast the worker lease: the job is not another worker's to
    take over meanwhile). A second stop of the worker meanwhile (another Ctrl-C) is passed on as a
    second SIGTERM, Scrapy's forced stop, and the crawl is still waited for."""
    if not signalled:
        process.send_signal(signal.SIGTERM)
    deadline: float | None = time.monotonic() + seconds
    forced = False
    while process.poll() is None:
        try:
            if deadline is not None and time.monotonic() >= deadline:
                logger.warning("The crawl (pid %d) did not stop within %.0f s: killed", process.pid, seconds)
                process.kill()
                deadline = None
            left = STOP_BEAT_SECONDS if deadline is None else deadline - time.monotonic()
            process.wait(max(0.0, min(STOP_BEAT_SECONDS, left)))
        except subprocess.TimeoutExpired:
            _beat_while_stopping(beat)
        except KeyboardInterrupt:
            if not forced:
                forced = True
                logger.warning("Stopping the crawl (pid %d) at once: what it did not ack is fetched again",
                               process.pid)
                process.send_signal(signal.SIGTERM)


def _beat_while_stopping(beat: Beat) -> None:
    try:
        beat({})
    except Exception as exc:  # noqa: BLE001 - the stop goes on whatever the job store says (taken over, down)
        logger.debug("No heartbeat while the crawl stops: %s", exc)


class FramePages:
    """A crawl job's progress in pages: done, of done + to fetch + in a node's hand (leased)."""

    def __init__(self, job: Job, settings: BaseSettings) -> None:
        from recordhound.frontier.factory import make_backend
        from recordhound.frontier.outside import crawl_name

        config = FrontierConfig.from_settings(settings)
        profile = load_profile(job.doc["profile"], settings.getlist("RECORDHOUND_PROFILES_DIRS"))
        self.job, self.backend = job, make_backend(config, crawl_name(config, profile), timeout=10.0)
        self.lease_seconds = config.lease_seconds
        self.opened = False
        self.first_page = False
        self.base: int | None = None  # pages done before this run (a resumed crawl has some)
        self.progress(None)

    def progress(self, pid: int | None) -> dict[str, Any]:
        try:
            counts = self._opened().counts()
        except Exception as exc:  # noqa: BLE001 - the store may not exist yet, or be down: no progress now
            logger.debug("No frontier counts yet: %s", exc)
            return {"pid": pid}
        total = counts.done + counts.to_fetch + counts.leased_total
        changes: dict[str, Any] = {"pid": pid, "progress": {"done": counts.done, "total": total, "unit": "pages"}}
        if self.base is None:
            self.base = counts.done
        elif counts.done and counts.done != self.base and not self.first_page:
            self.first_page = True
            changes["first_page_at"] = time.time()
        return changes

    def restart_if_asked(self, beat: Beat) -> None:
        """``job start`` (run it again from the beginning): the crawl's frontier is reset before its first
        node starts (refused while a node of it is alive), then the job says so (a worker that takes the
        job over after that does not reset it again; one that takes it over before resets a crawl that has
        not started)."""
        if not self.job.doc.get("reset_crawl"):
            return
        from recordhound.frontier.nodes import others_alive

        status = self._opened().counts().status  # compare-and-set to "resetting": a node that joins from now on
        if not self.backend.begin_reset(status):  # waits for the reset; one registered before is seen below
            raise JobFailed(f"{self.job.name}: the crawl's state changed while its reset began: `job start` again")
        if others_alive(self.backend, self.lease_seconds):  # their leases would vanish under them
            self.backend.set_status(status)
            raise JobFailed(f"{self.job.name}: the crawl has live nodes (another run of it goes on): stop them, "
                            f"then `job start` again")
        self.backend.reset()
        self.base = None  # this run's pages are counted from the reset
        logger.info("%s: the crawl's frontier is reset (job start: from the beginning)", self.job.name)
        beat({"reset_crawl": False})

    def _opened(self) -> Any:
        if not self.opened:
            self.backend.open()
            self.opened = True
        return self.backend

    def close(self) -> None:
        if self.opened:
            self.backend.close()


def run_scrapyd(job: Job, settings: BaseSettings, config: WorkerConfig, beat: Beat,
                overrides: list[tuple[str, str]]) -> str:
    """The crawl as a scrapyd job of ``RECORDHOUND_JOB_SCRAPYD_TARGET`` (its progress is read from
    the shared frontier, so use it with REDIS_URL); stop cancels it with SIGTERM. A job taken over
    from a worker that died follows the crawl that worker started, if scrapyd still has it (it
    outlives its worker): one crawl, not a second one beside it; and a job taken over ``stopping``
    cancels it, or starts nothing."""
    from recordhound.scrapyd_client import ScrapydClient, Target

    client = ScrapydClient(Target.from_config(config.scrapyd_target))
    external = _left_running(job, client.jobs()) if job.doc.get("taken_over") else None
    if external is not None:
        logger.info("%s: following scrapyd job %s, which its last worker started", job.name, external)
    elif job.status == states.STOPPING:
        return states.STOPPED
    pages = FramePages(job, settings)
    stopping, name = False, ""
    try:
        if external is None:
            pages.restart_if_asked(beat)
            args = {"source": str(job.doc["profile"]), **({"base_url": job.doc["base_url"]} if job.doc.get("base_url")
                                                          else {})}
            name = f"{_scrapyd_prefix(job)}{job.doc.get('attempts', 1)}"
            beat({"external": name})  # before scrapyd has it: a stop after this worker's death cancels it there
            external = client.schedule("catalog", 1, dict(overrides), args, job_ids=[name])[0]
            failpoints.hit("jobs.scrapyd_scheduled")
        while (where := _scrapyd_state(client.jobs(), external)) != "finished":
            if where is None:  # cancelled while pending, or scrapyd restarted: it will not finish
                if stopping:
                    break
                raise JobFailed(f"scrapyd no longer lists job {external} (restarted, or cancelled there)")
            if beat({**pages.progress(None), "external": external}) == states.STOPPING and not stopping:
                stopping = True
                client.cancel(external)
            time.sleep(config.poll_seconds)
        beat({**pages.progress(None), "external": external})  # the counts of the crawl's end
    except KeyboardInterrupt:  # the worker's own stop: its crawl stops too (as a local crawl does), resumable
        if (external or name) and not stopping:  # (scrapyd may have it though its answer did not come)
            _cancel_quietly(client, external or name)
        raise
    finally:
        pages.close()
    return states.STOPPED if stopping or job.status == states.STOPPING else states.DONE


def _cancel_quietly(client: Any, external: str) -> None:
    try:
        client.cancel(external)
    except Exception as exc:  # noqa: BLE001 - the worker stops whatever scrapyd answers
        logger.warning("Could not cancel scrapyd job %s while stopping: %s", external, exc)


def _scrapyd_prefix(job: Job) -> str:
    """The scrapyd job ids of this job's runs: this, then the attempt's number."""
    return f"{job.source}--job{job.id}-"


def _left_running(job: Job, jobs: dict[str, Any]) -> str | None:
    """A crawl of this job that scrapyd still has pending or running (its last worker died before it
    could see it end: it may not even have written its id), or None."""
    return next((str(found["id"]) for state in ("running", "pending") for found in jobs.get(state, [])
                 if str(found.get("id", "")).startswith(_scrapyd_prefix(job))), None)


def _scrapyd_state(jobs: dict[str, Any], external: str) -> str | None:
    """Which of scrapyd's lists holds the job: "pending", "running", "finished", or None."""
    return next((state for state in ("finished", "running", "pending")
                 if any(found.get("id") == external for found in jobs.get(state, []))), None)
