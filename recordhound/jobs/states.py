"""Every state of a job, named once, with the sets that matter (as ``celery.states``)."""

from __future__ import annotations

QUEUED = "queued"  # waiting for a worker (new, started again, resumed, or its schedule came due)
RUNNING = "running"  # a worker holds it (and writes a heartbeat)
STOPPING = "stopping"  # asked to stop; its worker stops it at the next batch or page
STOPPED = "stopped"  # stopped by a person; resume continues where it stopped
DONE = "done"  # finished (a scheduled job is queued again when its next run comes due)
FAILED = "failed"  # its last run failed; ``last_error`` says why; resume retries it

STATES = (QUEUED, RUNNING, STOPPING, STOPPED, DONE, FAILED)
HELD = frozenset({RUNNING, STOPPING})  # a worker holds the job
STARTABLE = frozenset({STOPPED, DONE, FAILED})  # start/resume puts it back in the queue
STOPPABLE = frozenset({QUEUED, RUNNING})
TERMINAL = frozenset({STOPPED, DONE, FAILED})
RUN_ENDS = frozenset({DONE, FAILED})  # a run's own ends: a scheduled job comes due again after them

CRAWL, IMPORT = "crawl", "import"  # what a job does: crawl a shop's profile, import a file
