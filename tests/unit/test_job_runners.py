"""A worker's crawl runs: a crawl that ignores SIGTERM is killed after the stop time (the worker's
own stop is not replaced by a timeout), and a scrapyd job that scrapyd no longer lists is noticed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from recordhound.jobs.runners import _scrapyd_state, _stop_crawl

STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"


def test_a_crawl_that_ignores_sigterm_is_killed_after_the_stop_time() -> None:
    process = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"up\n"  # its handler is set
        started = time.monotonic()
        _stop_crawl(process, 1.0)
        assert process.returncode == -signal.SIGKILL
        assert time.monotonic() - started < 30
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stdout is not None
        process.stdout.close()


def test_a_scrapyd_job_is_found_in_its_list_or_in_none() -> None:
    jobs = {"pending": [{"id": "a"}], "running": [{"id": "b"}], "finished": [{"id": "c"}]}
    assert [_scrapyd_state(jobs, job) for job in "abcd"] == ["pending", "running", "finished", None]
