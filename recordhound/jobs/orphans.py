"""A crawl that a worker started stops when that worker is gone.

``recordhound worker`` runs each crawl in a session of its own (a terminal's Ctrl-C reaches the worker
alone, which then stops its crawl once), so nothing of the worker's end reaches the crawl by itself:
a worker killed with SIGKILL, or stopped by a supervisor that kills its process group, left its crawl
running, and the job, taken over by the next worker, crawled twice at once. The worker names itself
(and its stop time) in the crawl's environment. A crawl whose worker is gone before it starts does
not start; one whose worker goes while it runs stops as the worker's own stop would have stopped it:
one SIGTERM (what it holds is written, its leases returned; none when the worker had sent it already),
and a second one (Scrapy's forced stop) if it is still running after the worker's stop time.
"""

from __future__ import annotations

import os
import signal
import threading
import time

ENV = "RECORDHOUND_WORKER"  # "PID STOP_SECONDS"
LOOK_SECONDS = 1.0


def env(stop_seconds: float) -> dict[str, str]:
    """For the environment of a crawl this process (a worker) starts."""
    return {ENV: f"{os.getpid()} {stop_seconds}"}


def worker_gone() -> bool:
    """In a crawl: whether the worker that started it is gone already; if it is there, it is watched
    from now on. False outside a worker's crawl (or for a value of ``ENV`` that is not the worker's)."""
    pid, _, stop = os.environ.get(ENV, "").partition(" ")
    try:
        stop_seconds = float(stop)
    except ValueError:
        return False
    if not pid.isdigit() or not 0 < stop_seconds < float("inf"):
        return False
    if os.getppid() != int(pid):
        return True
    threading.Thread(target=_stop_when_gone, args=(int(pid), stop_seconds), daemon=True,
                     name="recordhound-worker-watch").start()
    return False


def _stop_when_gone(worker: int, stop_seconds: float) -> None:
    while os.getppid() == worker:
        time.sleep(LOOK_SECONDS)
    if not _stopping():  # the worker may have asked already: a second SIGTERM now would force the stop
        os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(stop_seconds)
    os.kill(os.getpid(), signal.SIGTERM)  # still here: forced (a daemon thread ends with its process)


def _stopping() -> bool:
    """A stop is under way: Scrapy's handler of the next SIGTERM is its forced stop (``_signal_kill``)."""
    return getattr(signal.getsignal(signal.SIGTERM), "__name__", "") == "_signal_kill"
