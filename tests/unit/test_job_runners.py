"""A worker's crawl runs: a crawl that ignores SIGTERM is killed after the stop time (the worker's
own stop is not replaced by a timeout), a second stop of the worker forces its crawl and still waits
for it, one a person's stop signalled already gets no second SIGTERM, and a scrapyd job that scrapyd
no longer lists is noticed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from recordhound.jobs.runners import _stop_crawl
from recordhound.jobs.scrapyd_runs import _scrapyd_state

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
# as Scrapy takes SIGTERMs: the first starts a (here endless) graceful stop, the second forces it
TWICE = ("import os, signal, time\nseen = []\ndef term(*_):\n    seen.append(1)\n    if len(seen) == 2:\n"
         "        os._exit(2)\nsignal.signal(signal.SIGTERM, term)\nprint('up', flush=True)\ntime.sleep(60)")

# a crawl whose graceful close takes 2.5 s; it exits with the number of SIGTERMs it got (two: forced at once)
SLOW_CLOSE = ("import os, signal, time\nseen = []\ndef term(*_):\n    seen.append(1)\n    if len(seen) == 2:\n"
              "        os._exit(2)\nsignal.signal(signal.SIGTERM, term)\nprint('up', flush=True)\n"
              "while not seen:\n    time.sleep(0.05)\ntime.sleep(2.5)\nos._exit(len(seen))")


def _beat(changes: dict[str, object]) -> str:
    return "running"


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
        _stop_crawl(process, 1.0, _beat)
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
        _stop_crawl(process, 30.0, _beat)
        assert process.returncode == 2, "the crawl got its second SIGTERM and was waited for"


def test_a_worker_stopped_after_a_person_s_stop_sends_no_second_sigterm_and_beats_while_it_waits() -> None:
    """The person's stop sent the crawl its SIGTERM (``signalled``); the worker's own stop then waits for
    that close: no second SIGTERM (Scrapy's forced stop), and the job's heartbeat written meanwhile (the
    close may outlast the worker lease)."""
    beats: list[dict[str, object]] = []
    with _crawl_like(SLOW_CLOSE) as process:
        process.send_signal(signal.SIGTERM)  # the person's stop, sent by the worker's run loop
        _stop_crawl(process, 30.0, lambda changes: beats.append(changes) or "stopping", signalled=True)
        assert process.returncode == 1, "one SIGTERM in all: the close ran its course"
    assert len(beats) >= 2, beats  # one a second while the crawl closed
