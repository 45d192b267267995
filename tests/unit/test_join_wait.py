"""Joining a crawl while the store is unreachable: ``lifecycle.when_reachable``'s retry loop.

The store is a real embedded frontier; each step opens it, as a join does, and raises what the
test says (SQLite's own "database is locked" is what the backend calls transient), or meets a
real lock that another connection holds on the file.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recordhound.exceptions import RecordhoundError
from recordhound.frontier.lifecycle import NotJoined, when_reachable
from recordhound.frontier.sqlite import SqliteFrontier

LOCKED = sqlite3.OperationalError("database is locked")
CAP = 0.01  # retry_max_seconds: the backoff never waits longer than this


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteFrontier]:
    backend = SqliteFrontier(str(tmp_path / "crawl.sqlite3"))
    yield backend
    backend.close()


def _steps(store: SqliteFrontier, *outcomes: BaseException | str) -> tuple[Callable[[], str], list[bool]]:
    """A join step that opens the store then raises (or returns) the next outcome; the list says,
    per try, whether the store was open when the try began (it must have been closed after a failure)."""
    left, opened_before = list(outcomes), []

    def step() -> str:
        opened_before.append(store._db is not None)
        store.open()
        outcome = left.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return step, opened_before


def test_a_store_unreachable_for_a_while_is_joined_once_it_answers(store: SqliteFrontier) -> None:
    step, opened_before = _steps(store, LOCKED, LOCKED, "joined")
    assert when_reachable(store, step, CAP, 60, threading.Event()) == "joined"
    assert opened_before == [False, False, False]  # closed after each failed try


def test_a_store_unreachable_past_the_wait_is_not_joined(store: SqliteFrontier) -> None:
    step, opened_before = _steps(store, *[LOCKED] * 1000)
    with pytest.raises(NotJoined) as raised:
        when_reachable(store, step, CAP, 0.1, threading.Event())
    assert raised.value.reason == "frontier_unreachable"
    assert "stayed unreachable for 0 s" in str(raised.value) and "database is locked" in str(raised.value)
    assert len(opened_before) > 1 and store._db is None


def test_the_wait_counts_from_the_first_failure(store: SqliteFrontier) -> None:
    """A first try that is slow (waiting for another node's reset, say) before it fails does not
    use up the wait: the next try is made."""
    slow_then_locked = [True]

    def step() -> str:
        store.open()
        if slow_then_locked:
            slow_then_locked.clear()
            time.sleep(0.3)
            raise LOCKED
        return "joined"

    assert when_reachable(store, step, CAP, 0.2, threading.Event()) == "joined"


def test_a_stop_while_waiting_gives_up_at_once(store: SqliteFrontier) -> None:
    stopping = threading.Event()
    stopping.set()
    step, opened_before = _steps(store, LOCKED, "joined")
    with pytest.raises(NotJoined) as raised:
        when_reachable(store, step, 60.0, 60, stopping)
    assert raised.value.reason == "shutdown" and len(opened_before) == 1 and store._db is None


def test_a_store_that_refuses_this_node_is_not_joined_without_a_retry(store: SqliteFrontier) -> None:
    refusal = RecordhoundError("node id 'n1' (RECORDHOUND_NODE_ID) is in use by pid 1 on host")
    step, opened_before = _steps(store, refusal, "joined")
    with pytest.raises(NotJoined) as raised:
        when_reachable(store, step, CAP, 60, threading.Event())
    assert raised.value.reason == "frontier_refused" and str(raised.value) == str(refusal)
    assert len(opened_before) == 1 and store._db is None


def test_a_bug_is_raised_as_it_is(store: SqliteFrontier) -> None:
    step, opened_before = _steps(store, sqlite3.OperationalError("no such column: nope"), "joined")
    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        when_reachable(store, step, CAP, 60, threading.Event())
    assert len(opened_before) == 1


def test_a_frontier_file_locked_by_another_process_is_waited_for(tmp_path: Path) -> None:
    """open() wraps SQLite's "database is locked" in "cannot open the frontier file": still an
    outage to wait for (another node rebuilding the file, say), not a refusal."""
    path = str(tmp_path / "crawl.sqlite3")
    first = SqliteFrontier(path)
    first.open()
    first.close()
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # holds the write lock
    unlock = threading.Timer(0.5, other.rollback)
    unlock.start()
    store = SqliteFrontier(path, timeout=0.05)
    tries = []

    def step() -> str:
        tries.append(1)
        store.open()
        return "joined"

    try:
        assert when_reachable(store, step, CAP, 10, threading.Event()) == "joined"
        assert len(tries) > 1  # it met the lock, then waited it out
    finally:
        unlock.join()
        other.close()
        store.close()
