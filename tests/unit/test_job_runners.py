"""A worker's crawl runs: a crawl that ignores SIGTERM is killed after the stop time (the worker's
own stop is not replaced by a timeout), a second stop of the worker forces its crawl and still waits
for it, and a scrapyd job that scrapyd no longer lists is noticed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from recordhound.jobs.runners import _scrapyd_state, _stop_crawl

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
# as Scrapy takes SIGTERMs: the first starts a (here endless) graceful stop, the second forces it
TWICE = ("import os, signal, time\nseen = []\ndef term(*_):\n    seen.append(1)\n    if len(seen) == 2:\n"
         "        os._exit(2)\nsignal.signal(signal.SIGTERM, term)\nprint('up', flush=True)\ntime.sleep(60)")


@contextlib.contextmanager
def _crawl_like(code: str) -> Iterator[subprocess.Popen[bytes]]:
    """A child running ``code``, up once its SIGTERM handler is set; killed at the end if still there."""
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"up\n"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stdout is not None
        process.stdout.close()


def test_a_crawl_that_ignores_sigterm_is_killed_after_the_stop_time() -> None:
    with _crawl_like(STUBBORN) as process:
        started = time.monotonic()
        _stop_crawl(process, 1.0)
        assert process.returncode == -signal.SIGKILL
        assert time.monotonic() - started < 30


def test_a_scrapyd_job_is_found_in_its_list_or_in_none() -> None:
    jobs = {"pending": [{"id": "a"}], "running": [{"id": "b"}], "finished": [{"id": "c"}]}
    assert [_scrapyd_state(jobs, job) for job in "abcd"] == ["pending", "running", "finished", None]


def test_a_second_stop_of_the_worker_forces_its_crawl_and_still_waits_for_it() -> None:
    """Ctrl-C twice at the worker: the second reaches ``_stop_crawl`` as KeyboardInterrupt while it waits
    for the crawl's graceful stop. Before, it left that wait with the crawl still running (an orphan:
    its job, queued again, was crawled twice at once). Now it is passed on as the crawl's second
    SIGTERM (Scrapy's forced stop) and the crawl is still waited for."""
    with _crawl_like(TWICE) as process:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        _stop_crawl(process, 30.0)
        assert process.returncode == 2, "the crawl got its second SIGTERM and was waited for"
