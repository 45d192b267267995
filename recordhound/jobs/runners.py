"""What a worker does with a job it holds: import a file, or crawl a shop (a local crawl process,
or a scrapyd job). Each run reports progress through ``beat``, which answers whether the job was
asked to stop; a run that returns normally is done or stopped, one that raises has failed."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from scrapy.settings import BaseSettings

from recordhound import failpoints
from recordhound.backoff import backoff_seconds
from recordhound.config import FrontierConfig
from recordhound.exceptions import RecordhoundError, Unavailable, first_line
from recordhound.jobs import orphans, states
from recordhound.jobs.config import WorkerConfig
from recordhound.jobs.store import Job
from recordhound.preflight import safe_url
from recordhound.sources import load_profile

if TYPE_CHECKING:
    from recordhound.frontier.backend import FrontierBackend

logger = logging.getLogger(__name__)
Beat = Callable[[dict[str, Any]], str]  # progress changes → the job's status now
LOG_DIR = os.path.join(".recordhound", "logs")
STOP_BEAT_SECONDS = 1.0  # while a crawl stops, the job's heartbeat is written this often
UNAVAILABLE_CAP_SECONDS = 30.0  # the longest wait before starting again a crawl that could not reach a service
SAID_TAIL_BYTES = 64 * 1024  # the crawl's error line is looked for in this much of the end of its log
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL})  # a person's, a manager's
STOPPED_CODE = -1000  # _crawl_once: the job was stopped (the crawl returned its leases), not an exit code


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
                     progress=progress, should_stop=lambda: status["now"] == states.STOPPING,
                     retry_max_seconds=store.retry_max_seconds)
    try:
        source_id, first["line"], total["lines"] = run.prepare(restart=bool(job.doc.get("restart")))
        beat({"progress": {"done": first["line"] - 1, "total": total["lines"], "unit": "lines"}, "restart": False})
        result = run.run(source_id, first["line"], total["lines"])
    finally:  # (a worker runs job after job: each run's connections closed, not left to the garbage collector)
        writer.queue.close()
        engine.dispose()
    return states.STOPPED if result.stopped else states.DONE


def crawl_command(job: Job, overrides: list[tuple[str, str]]) -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", f"source={job.doc['profile']}",
               "-s", f"LOG_FILE={_log_path(job)}", "-s", "RECORDHOUND_SUMMARY_ENABLED=false",
               "-s", f"RECORDHOUND_STATS_FILE={_stats_path(job, overrides)}"]
    if job.doc.get("base_url"):
        command += ["-a", f"base_url={job.doc['base_url']}"]
    if (job.doc.get("schedule") or {}).get("follow"):
        command += ["-s", "RECORDHOUND_FOLLOW=true"]
    for name, value in overrides:
        command += ["-s", f"{name}={value}"]
    return command


def run_crawl(job: Job, settings: BaseSettings, config: WorkerConfig, beat: Beat,
              overrides: list[tuple[str, str]], exited: Callable[[], None] = lambda: None) -> str:
    """A local crawl process; SIGTERM when asked to stop (it returns its leases: resumable). It runs in a
    session of its own: a terminal's Ctrl-C reaches the worker alone, which stops the crawl once (in the
    worker's process group, the crawl took that Ctrl-C as a first stop and the worker's SIGTERM as a
    second, forced one). A worker that dies (SIGKILL) takes its crawl with it (``orphans.py``). A crawl
    that could not reach Redis or the product database at its start (exit ``Unavailable.EXIT_CODE``:
    it did nothing) is started again after a backoff, as the worker waits out the job store's outages:
    an outage between the claim and the crawl's start does not fail the job. ``exited`` is told once the
    last crawl has exited: from then on the worker's stop waits for the run's end to be recorded."""
    os.makedirs(LOG_DIR, exist_ok=True)
    pages = FramePages(job, settings)
    try:
        if not _reset_when_reachable(job, config, beat, pages):
            return states.STOPPED
        tries, since = 0, time.monotonic()
        while True:
            logged = _logged(job)  # what earlier runs wrote to the job's log: their errors are not this one's
            ended = _crawl_once(job, config, beat, overrides, pages)
            if ended != Unavailable.EXIT_CODE or time.monotonic() - since >= config.unavailable_seconds:
                break  # (RECORDHOUND_WORKER_UNAVAILABLE_SECONDS): the job fails with the crawl's error
            tries += 1
            said = _said(job, logged) or f"see {_log_path(job)}"
            if _backed_off(job, config, beat, tries, f"its crawl could not reach a service: {said}") == states.STOPPING:
                return states.STOPPED
        exited()
        failpoints.hit("jobs.crawl_exited")
        beat(pages.progress(None))  # the counts of the crawl's end, not of the last look
        if (how := _stopped_from_outside(ended, job, overrides)) and (left := pages.unfinished(ended >= 0)):
            raise JobFailed(f"the crawl was stopped from outside the worker ({how}) with {left}; `job resume` goes "
                            f"on from its frontier (log: {_log_path(job)})")
    finally:
        pages.close()
    if ended == STOPPED_CODE:
        return states.STOPPED
    if ended != 0:
        said = _said(job, logged)
        raise JobFailed(f"the crawl exited with code {ended}{': ' + said if said else ''} (log: {_log_path(job)})")
    return states.DONE


def _status_under_live_nodes(backend: FrontierBackend) -> str:
    """The status to give back to a crawl with live nodes whose reset this worker took over (its own, cut
    by an outage, or a killed worker's), the status it replaced being unknown: completed when it is
    drained (its last node closing), else running (its nodes are crawling, or seeding it)."""
    return "completed" if backend.counts().drained else "running"


def _backed_off(job: Job, config: WorkerConfig, beat: Beat, tries: int, why: str) -> str:
    """One wait of a run that waits out a service it cannot reach: says why in one line, waits the
    backoff of its ``tries`` (the job's heartbeat written meanwhile); the job's status after it."""
    delay = backoff_seconds(tries, UNAVAILABLE_CAP_SECONDS)
    logger.warning("%s: %s; tried again in %.1f s", job.name, why, delay)
    return _wait(delay, config.poll_seconds, beat)


def _reset_when_reachable(job: Job, config: WorkerConfig, beat: Beat, pages: FramePages) -> bool:
    """``pages.restart_if_asked``, waited for while the frontier is unreachable (Redis down, its file locked),
    as a crawl that cannot reach a service at its start is: with backoff, one line per try, for
    ``RECORDHOUND_WORKER_UNAVAILABLE_SECONDS``. A reset that an outage cut in two is taken over by the next
    try (its owner is this worker's). False: the job was stopped meanwhile."""
    tries, since = 0, time.monotonic()
    while True:
        try:
            pages.restart_if_asked(beat)
            return True
        except Exception as exc:
            if not (isinstance(exc, Unavailable) or pages.backend.is_transient(exc)):
                raise
            if time.monotonic() - since >= config.unavailable_seconds:
                raise JobFailed(f"the crawl's frontier stayed unreachable for its reset (job start): "
                                f"{first_line(exc)}") from exc
            tries += 1
            why = f"the crawl's frontier is unreachable for its reset (job start): {first_line(exc)}"
            if _backed_off(job, config, beat, tries, why) == states.STOPPING:
                return False


def _stopped_from_outside(ended: int, job: Job, overrides: list[tuple[str, str]]) -> str:
    """How a crawl the worker did not stop was stopped, if it was: it closed on a SIGTERM or SIGINT (exit 0,
    finish reason "shutdown"; no stats file: a second one forced the stop, which leaves before writing them),
    or a stop signal ended the process (a second SIGTERM that came as it was exiting, a SIGKILL). "" otherwise
    (it completed, or a ``closespider_*`` limit closed it: done; a crash)."""
    if -ended in STOP_SIGNALS:  # (a crash, SIGSEGV or SIGABRT, keeps its exit code and error line)
        return f"{signal.Signals(-ended).name} ended it"
    if ended == 0 and _finish_reason(job, overrides) in ("", "shutdown"):
        return "a SIGTERM to it"
    return ""


def _log_path(job: Job) -> str:
    return os.path.join(LOG_DIR, f"job-{job.id}.log")


def _stats_path(job: Job, overrides: list[tuple[str, str]]) -> str:
    """Where the crawl writes its stats: the worker's ``-s RECORDHOUND_STATS_FILE`` if given, else the job's own."""
    return dict(overrides).get("RECORDHOUND_STATS_FILE") or os.path.join(LOG_DIR, f"job-{job.id}.stats.json")


def _finish_reason(job: Job, overrides: list[tuple[str, str]]) -> str:
    """Why the crawl closed, from its stats file ("shutdown": a SIGTERM or SIGINT; "finished"; a
    ``closespider_*`` limit...); "" when it wrote none (a forced stop leaves before writing it)."""
    try:
        with open(_stats_path(job, overrides), encoding="utf-8") as stats:
            return str(json.load(stats).get("stats", {}).get("finish_reason", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def _logged(job: Job) -> int:
    """How much the job's log holds now (earlier runs'): where a crawl started now begins writing."""
    try:
        return os.path.getsize(_log_path(job))
    except OSError:
        return 0


def _said(job: Job, logged: int) -> str:
    """The crawl's last one-line error (``error: ...``, which `scrapy crawl` prints to its stderr: the
    job's log) past ``logged`` (not an earlier run's), without its prefix; "" when it said none."""
    try:
        with open(_log_path(job), "rb") as log:
            log.seek(max(logged, os.fstat(log.fileno()).st_size - SAID_TAIL_BYTES))
            lines = log.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    return next((line[len("error: "):] for line in reversed(lines) if line.startswith("error: ")), "")


def _crawl_once(job: Job, config: WorkerConfig, beat: Beat, overrides: list[tuple[str, str]],
                pages: FramePages) -> int:
    """One crawl process to its end: its exit code, ``STOPPED_CODE`` when the job was stopped meanwhile."""
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": os.environ.get("SCRAPY_SETTINGS_MODULE", "recordhound.settings"),
           **orphans.env(config.stop_seconds)}
    with suppress(FileNotFoundError):
        os.remove(_stats_path(job, overrides))  # an earlier run's: its finish reason is not this one's
    with open(_log_path(job), "ab") as log:  # its stderr too: the one-line errors `scrapy crawl` prints there
        process = subprocess.Popen(crawl_command(job, overrides), env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
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
    finally:
        if process.poll() is None:  # the worker itself is stopping: let the crawl return its leases
            _stop_crawl(process, config.stop_seconds, beat, signalled=stopping)
    # (a crawl the worker's SIGTERM reached before Scrapy took the signal over ended by it, holding nothing)
    return STOPPED_CODE if stopping and process.returncode in (0, -signal.SIGTERM) else process.returncode


def _wait(seconds: float, poll_seconds: float, beat: Beat) -> str:
    """``seconds`` with the job's heartbeat written meanwhile; the job's status at the end (or once stopping)."""
    deadline = time.monotonic() + seconds
    while (status := beat({})) != states.STOPPING and (left := deadline - time.monotonic()) > 0:
        time.sleep(min(poll_seconds, left))
    return status


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
        self.where = (f"crawl {crawl_name(config, profile)!r} in Redis at {safe_url(config.redis_url)} under "
                      f"{config.redis_prefix}" if config.redis_url else f"crawl {crawl_name(config, profile)!r} in "
                      f"the frontier file of this folder")
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
        owner = self.backend.reset_owner() if status == "resetting" else ""  # (a reset left unfinished: taken over)
        if not self.backend.begin_reset(status, owner):  # waits for the reset; one registered before is seen below
            raise JobFailed(f"{self.job.name}: the crawl's state changed while its reset began: `job start` again")
        if others_alive(self.backend, self.lease_seconds):  # their leases would vanish under them
            self.backend.set_status(status if status != "resetting" else _status_under_live_nodes(self.backend))
            raise JobFailed(f"{self.job.name}: the crawl has live nodes (another run of it goes on): stop them, "
                            f"then `job start` again")
        if not self.backend.reset():
            raise JobFailed(f"{self.job.name}: another party took the crawl's reset over before it was done: "
                            f"`job start` again")
        self.base = None  # this run's pages are counted from the reset
        logger.info("%s: the crawl's frontier is reset (job start: from the beginning)", self.job.name)
        beat({"reset_crawl": False})

    def unfinished(self, unseeded_fails: bool = True) -> str:
        """What the crawl has left, read once scrapyd says its process finished ("": it completed). A
        finished process is not a completed crawl: one cancelled (or closed early) returned its leases
        and left pages to fetch. A frontier that cannot be read says nothing: "" (scrapyd's word stands).
        A frontier never seeded fails the job (``unseeded_fails``), else says nothing either."""
        try:
            counts = self._opened().counts()
        except Exception as exc:  # noqa: BLE001 - the store down at the end: the crawl is not known unfinished
            logger.warning("%s: could not read the crawl's frontier to check that it completed: %s", self.job.name, exc)
            return ""
        if counts.status == "completed":  # (rechecks come due since are the next run's work)
            return ""
        if not counts.seeded:  # the crawl did not start, or the worker and it do not share the frontier
            if not unseeded_fails:
                return ""
            raise JobFailed(f"the crawl never queued its start requests: it failed as it started (see its log), or "
                            f"this worker does not see its frontier ({self.where})")
        left = counts.queued + counts.leased_total  # (rechecks come due meanwhile, ``due``: the next run's work)
        return f"{left} pages left to fetch" if left else ""

    def _opened(self) -> Any:
        if not self.opened:
            self.backend.open()
            self.opened = True
        return self.backend

    def close(self) -> None:
        if self.opened:
            self.backend.close()
