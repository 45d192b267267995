"""A reset of a crawl whose node is alive deletes nothing, on both backends: a reset left over (its
owner, a worker's `job start`, killed after it began, or cut by an outage) is not finished by a node
that joins while another node of the crawl runs, and the worker's retry of its own cut reset gives the
crawl back its running status when it finds live nodes (before: the retry wrote "resetting" back, and a
node that joined later finished that reset under the live node: its queue and leases gone; a review
confirmed both). Real stores, a real live process as the node, the outage injected."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
import redis

from recordhound.frontier import lifecycle, nodes
from recordhound.frontier.backend import FrontierBackend, NodeInfo
from recordhound.frontier.sqlite import SqliteFrontier
from recordhound.jobs import runners
from tests.integration.test_frontier_reset_race import entries
from tests.integration.test_frontier_reset_race import handles  # noqa: F401 - the fixture

LEASE_SECONDS = 1.0  # a left-over reset is taken over after this; a node's heartbeat is stale after it
BEAT_SECONDS = 0.1


@contextmanager
def live_node(store: FrontierBackend) -> Iterator[subprocess.Popen[bytes]]:
    """A node of the crawl: a live process on this host, registered, its heartbeat kept fresh."""
    process = subprocess.Popen(["sleep", "120"])
    assert store.claim_node("n1", NodeInfo(socket.gethostname(), process.pid, "tok", store.now()), None)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(BEAT_SECONDS):
            store.heartbeat("n1", "tok")

    beating = threading.Thread(target=beat, daemon=True)
    beating.start()
    try:
        yield process
    finally:
        stop.set()
        beating.join()
        process.kill()
        process.wait()


def _filled(handles: Callable[[], FrontierBackend], status: str = "running") -> FrontierBackend:
    """A crawl with three pages queued (running), or drained (completed: its last node closing)."""
    store = handles()
    store.commit(entries("/a", "/b", "/c") if status == "running" else [], [], [], seeded=True)
    store.set_status(status)
    return store


def test_a_left_over_reset_is_not_finished_under_a_live_node(handles: Callable[[], FrontierBackend]) -> None:
    store, joiner, worker = _filled(handles), handles(), handles()
    with live_node(store) as node:
        assert worker.begin_reset("running")  # the worker's `job start`, killed right after (kill -9)
        joining = threading.Thread(target=lifecycle.reset_if_completed, args=(joiner, "demo", LEASE_SECONDS, False),
                                   daemon=True)
        joining.start()
        joining.join(LEASE_SECONDS * 4)
        assert joining.is_alive(), "a node finished the left-over reset under a live node"
        assert joiner.counts().queued == 3
        node.kill()
        node.wait()
    joining.join(30)  # the node gone (its pid dead): the reset is finished, by that one
    assert not joining.is_alive()
    assert joiner.counts().queued == 0


def test_a_node_waiting_on_a_left_over_reset_under_a_live_node_stops_when_asked(
        handles: Callable[[], FrontierBackend]) -> None:
    """The wait ends on the node's stop (SIGTERM: its ``stopping`` event) with nothing deleted; before, it
    went on, then finished the reset and joined (a review found it)."""
    store, joiner, worker = _filled(handles), handles(), handles()
    stopping, raised = threading.Event(), []

    def join() -> None:
        try:
            lifecycle.reset_if_completed(joiner, "demo", LEASE_SECONDS, False, stopping)
        except lifecycle.NotJoined as exc:
            raised.append(exc.reason)

    with live_node(store):
        assert worker.begin_reset("running")
        joining = threading.Thread(target=join, daemon=True)
        joining.start()
        joining.join(LEASE_SECONDS * 2)
        stopping.set()
        joining.join(10)
        assert not joining.is_alive() and raised == ["shutdown"]
        assert joiner.counts().queued == 3


@pytest.mark.parametrize("before", ["running", "completed"])
def test_the_worker_s_retry_of_its_own_cut_reset_gives_a_live_crawl_back_its_status(
        before: str, handles: Callable[[], FrontierBackend], monkeypatch: pytest.MonkeyPatch) -> None:
    """Running with pages queued, or completed with its last node still closing (a review found a
    completed crawl given back as running: the next run would resume it, not start it anew)."""
    store, worker_store = _filled(handles, before), handles()
    real, calls = nodes.others_alive, []

    def cut_once(backend: FrontierBackend, stale_after: float, token: str = "") -> bool:
        calls.append(stale_after)
        if len(calls) == 1:  # the outage right after the worker's begin_reset
            raise (sqlite3.OperationalError("database is locked") if isinstance(backend, SqliteFrontier)
                   else redis.ConnectionError("Connection refused"))
        return real(backend, stale_after, token)

    monkeypatch.setattr(nodes, "others_alive", cut_once)
    monkeypatch.setattr(runners, "backoff_seconds", lambda tries, cap: 0.05)
    pages: Any = runners.FramePages.__new__(runners.FramePages)
    pages.job = SimpleNamespace(id=1, name="job:1", doc={"reset_crawl": True})
    pages.backend, pages.opened, pages.lease_seconds, pages.base = worker_store, True, LEASE_SECONDS, None
    config: Any = SimpleNamespace(unavailable_seconds=30.0, poll_seconds=0.05)
    with live_node(store):
        with pytest.raises(runners.JobFailed, match="the crawl has live nodes"):
            runners._reset_when_reachable(pages.job, config, lambda changes: "running", pages)
        assert len(calls) == 2  # cut once, tried again
        counts = store.counts()
        assert (counts.status, counts.queued) == (before, 3 if before == "running" else 0)
