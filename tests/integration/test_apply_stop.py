"""Stopping ``recordhound apply``: a first stop (a service manager's SIGTERM to a following worker, Ctrl-C)
while the worker holds a batch lets that batch finish (written, settled, acked), then the worker ends with
its summary; a second stop ends it at once, its batch left leased until the lease runs out.

Real ``recordhound apply`` processes over both backends (a SQLite queue file and product DB; Redis and
PostgreSQL), frozen or held at ``apply.after_write`` (a decision written, not yet acked) when the signal
comes. After each, a one-off ``apply`` takes what is left: every decision applied once, the names and
offers in the product DB exactly the ones approved, IDs consecutive."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_apply_outage import NAMES, _apply, _assert_applied, _decided, _frozen, _stop, _wait_for

STOPPING = "Stopping once the batch in hand is applied"  # the worker's line at a first stop


def _states(env: ReviewEnv) -> dict[str, int]:
    return {state: len(env.queue.jobs(state)) for state in ("approved", "processing", "completed", "failed")}


def _apply_the_rest(env: ReviewEnv, tmp_path: Path) -> None:
    rest, log = _apply(env, tmp_path)
    try:
        assert rest.wait(120) == 0, log.read_text()[-3000:]
    finally:
        _stop(rest)


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("backend", ["embedded", "redis"])
def test_a_first_stop_lets_the_batch_in_hand_finish(backend: str, ending: signal.Signals, tmp_path: Path) -> None:
    """Two of the three decisions in one batch; the worker frozen after their write gets the stop, then runs on:
    it acks both and ends (exit 0, "applied 2"), the third decision still approved, no job left leased."""
    with review_env(backend, tmp_path) as env:
        entry_ids = _decided(env)
        worker, log = _apply(env, tmp_path, "--follow", "-s", "RECORDHOUND_REVIEW_BATCH_SIZE=2",
                             failpoints="apply.after_write=stop")
        try:
            _wait_for(lambda: _frozen(worker.pid), "the worker did not stop at apply.after_write", log)
            worker.send_signal(ending)  # (pending while it is frozen: it hears it once it runs again)
            worker.send_signal(signal.SIGCONT)
            assert worker.wait(60) == 0, log.read_text()[-3000:]
        finally:
            _stop(worker)
        text = log.read_text()
        assert STOPPING in text and "Traceback" not in text, text[-3000:]
        assert "applied 2 decisions, 0 failed" in text, text[-3000:]
        assert _states(env) == {"approved": 1, "processing": 0, "completed": 2, "failed": 0}, text[-3000:]
        _apply_the_rest(env, tmp_path)
        _assert_applied(env, entry_ids)


@pytest.mark.parametrize("backend", ["embedded", "redis"])
def test_a_second_stop_ends_the_worker_at_once(backend: str, tmp_path: Path) -> None:
    """Held for good after its write: a first SIGTERM leaves it running (it waits for the batch), a second ends it,
    exit 0 with nothing acked; the batch stays leased until its lease runs out, then another worker writes it
    again and finds what was written (nothing twice)."""
    with review_env(backend, tmp_path) as env:
        entry_ids = _decided(env)
        worker, log = _apply(env, tmp_path, "--follow", "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=3",
                             failpoints="apply.after_write=hang")
        try:
            _wait_for(lambda: _states(env)["processing"] == len(NAMES), "the worker did not lease the batch", log)
            worker.send_signal(signal.SIGTERM)
            _wait_for(lambda: STOPPING in log.read_text(), "the worker did not hear the first stop", log)
            assert worker.poll() is None, log.read_text()[-3000:]
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0, log.read_text()[-3000:]
        finally:
            _stop(worker)
        text = log.read_text()
        assert "applied 0 decisions, 0 failed" in text and "Traceback" not in text, text[-3000:]
        assert _states(env) == {"approved": 0, "processing": len(NAMES), "completed": 0, "failed": 0}, text[-3000:]
        time.sleep(3)  # the lease runs out
        _apply_the_rest(env, tmp_path)
        _assert_applied(env, entry_ids)
