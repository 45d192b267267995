"""A crawl that a worker started stops when that worker is gone.

``recordhound worker`` runs each crawl in a session of its own (a terminal's Ctrl-C reaches the worker
alone, which then stops its crawl once), so nothing of the worker's end reaches the crawl by itself:
a worker killed with SIGKILL, or stopped by a supervisor that kills its process group, left its crawl
running, and the job, taken over by the next worker, crawled twice at once. The worker names itself in
the crawl's environment; the crawl watches for it and stops gracefully (as SIGTERM stops it: what it
holds is written and its leases are returned) once its parent is no longer that worker.
"""

from __future__ import annotations

import os
import signal
import threading
import time

ENV = "RECORDHOUND_WORKER_PID"
LOOK_SECONDS = 1.0


def env() -> dict[str, str]:
    """For the environment of a crawl this process starts."""
    return {ENV: str(os.getpid())}


def watch_worker() -> None:
    """In a crawl a worker started (its environment says which): stop once that worker is gone."""
    worker = os.environ.get(ENV, "")
    if worker.isdigit() and os.getppid() == int(worker):
        threading.Thread(target=_stop_when_gone, args=(int(worker),), daemon=True,
                         name="recordhound-worker-watch").start()


def _stop_when_gone(worker: int) -> None:
    while os.getppid() == worker:
        time.sleep(LOOK_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
