"""A crawl job on scrapyd (``RECORDHOUND_JOB_SCRAPYD_TARGET``): scheduled there, or followed when a
worker that died left it running, to its end; its progress read from the shared frontier."""

from __future__ import annotations

import logging
import time
from typing import Any

from scrapy.settings import BaseSettings

from recordhound import failpoints
from recordhound.jobs import states
from recordhound.jobs.config import WorkerConfig
from recordhound.jobs.runners import Beat, FramePages, JobFailed
from recordhound.jobs.store import Job

logger = logging.getLogger(__name__)


def run_scrapyd(job: Job, settings: BaseSettings, config: WorkerConfig, beat: Beat,
                overrides: list[tuple[str, str]]) -> str:
    """The crawl as a scrapyd job of ``RECORDHOUND_JOB_SCRAPYD_TARGET`` (its progress is read from
    the shared frontier, so use it with REDIS_URL); stop cancels it with SIGTERM. A job taken over
    from a worker that died follows the crawl that worker started, if scrapyd still has it (it
    outlives its worker): one crawl, not a second one beside it; and a job taken over ``stopping``
    cancels it, or starts nothing. scrapyd's "finished" says the process ended, not that the crawl
    completed: the frontier says that. A followed crawl that was cut short (its worker cancelled it,
    then died before it could record the job's end) is run again, as the attempt's own scrapyd job
    resuming the frontier; one this worker started that was cut short fails the run."""
    from recordhound.scrapyd_client import ScrapydClient, Target

    client = ScrapydClient(Target.from_config(config.scrapyd_target))
    external = _left_running(job, client.jobs()) if job.doc.get("taken_over") else None
    if external is not None:
        logger.info("%s: following scrapyd job %s, which its last worker started", job.name, external)
    elif job.status == states.STOPPING:
        return states.STOPPED
    run = ScrapydRun(job, client, FramePages(job, settings), beat, config.poll_seconds)
    try:
        if external is None:
            run.pages.restart_if_asked(beat)
            run.schedule(overrides)
        else:
            run.external = external
        run.follow()
        if (left := run.unfinished()) and external is not None:
            logger.warning("%s: scrapyd job %s, which its last worker started, ended with %s: running the crawl "
                           "again", job.name, external, left)
            run.schedule(overrides)
            run.follow()
            left = run.unfinished()
        if left:
            raise JobFailed(f"scrapyd job {run.external} ended with {left} (cut short: cancelled there, or it "
                            f"closed early); `job resume` goes on from its frontier")
    except KeyboardInterrupt:  # the worker's own stop: its crawl stops too (as a local crawl does), resumable
        if run.external and not run.stopping:  # (scrapyd may have it though its answer did not come)
            _cancel_quietly(client, run.external)
        raise
    finally:
        run.pages.close()
    return states.STOPPED if run.stopping or job.status == states.STOPPING else states.DONE


class ScrapydRun:
    """One job's crawl on scrapyd: scheduled, or followed, to its end."""

    def __init__(self, job: Job, client: Any, pages: FramePages, beat: Beat, poll_seconds: float) -> None:
        self.job, self.client, self.pages, self.beat, self.poll_seconds = job, client, pages, beat, poll_seconds
        self.external = ""  # the scrapyd job followed (or being scheduled)
        self.stopping = False  # this worker asked scrapyd to stop it (the job is being stopped)

    def schedule(self, overrides: list[tuple[str, str]]) -> None:
        """A new scrapyd job of the crawl, named after this attempt; it resumes the crawl's frontier."""
        job = self.job
        args = {"source": str(job.doc["profile"]), **({"base_url": job.doc["base_url"]} if job.doc.get("base_url")
                                                      else {})}
        self.external = f"{_scrapyd_prefix(job)}{job.doc.get('attempts', 1)}"
        self.beat({"external": self.external})  # before scrapyd has it: a stop after this worker's death cancels it
        self.external = self.client.schedule("catalog", 1, dict(overrides), args, job_ids=[self.external])[0]
        failpoints.hit("jobs.scrapyd_scheduled")

    def follow(self) -> None:
        """Until scrapyd lists the job finished (or, once this worker cancelled it, no longer lists it)."""
        while (where := _scrapyd_state(self.client.jobs(), self.external)) != "finished":
            if where is None:  # cancelled while pending, or scrapyd restarted: it will not finish
                if self.stopping:
                    break
                raise JobFailed(f"scrapyd no longer lists job {self.external} (restarted, or cancelled there)")
            if self.beat({**self.pages.progress(None), "external": self.external}) == states.STOPPING \
                    and not self.stopping:
                self.stopping = True
                self.client.cancel(self.external)
            time.sleep(self.poll_seconds)
        if self.beat({**self.pages.progress(None), "external": self.external}) == states.STOPPING:  # its end's counts
            self.stopping = True  # a stop asked at the very end: the crawl is not run again

    def unfinished(self) -> str:
        """What the crawl left undone ("": completed, or this run was stopped: a stop leaves pages by design)."""
        if self.stopping or self.job.status == states.STOPPING:
            return ""
        return self.pages.unfinished()


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
