"""A reset left unfinished (its process died with the crawl's status "resetting") is finished by exactly
one of the parties that find it, on both backends: two nodes that both waited out the left-over reset
and try to finish it at once do not both reset, so the second never deletes the work of a node that
started filling the crawl after the first one's reset (before: both compare-and-sets from "resetting"
to "resetting" succeeded)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from recordhound.frontier import lifecycle
from recordhound.frontier.backend import Entry, FrontierBackend
from recordhound.frontier.redis import RedisFrontier
from recordhound.frontier.sqlite import SqliteFrontier
from recordhound.redis_client import crawl_prefix
from tests.services import redis_url, unique_prefix

WAIT_SECONDS = 0.5  # how long a left-over reset is waited for before a party finishes it (lease_seconds)
STEP_SECONDS = 30.0  # the longest a step of the interleaving is waited for


@pytest.fixture(params=["embedded", "redis"])
def handles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], FrontierBackend]]:
    """Opens handles on one crawl (each a party: a process of its own); the crawl is deleted at the end."""
    prefix = crawl_prefix(unique_prefix(), "demo")
    opened: list[FrontierBackend] = []

    def handle() -> FrontierBackend:
        store: FrontierBackend = (SqliteFrontier(str(tmp_path / "frontier.sqlite3")) if request.param == "embedded"
                                  else RedisFrontier(redis_url(), prefix))
        store.open()
        opened.append(store)
        return store

    yield handle
    cleanup = handle()
    cleanup.reset()  # a reset nobody began: the operator's `frontier reset` (unconditional)
    for store in opened:
        store.close()


def entries(*urls: str) -> list[Entry]:
    return [Entry(hashlib.sha1(url.encode()).digest()[:8], 0, url) for url in urls]


class Paused:
    """A party's backend whose first ``begin_reset`` and ``reset`` run the test's hooks first."""

    def __init__(self, backend: FrontierBackend, before_begin: Callable[[], None],
                 after_begin: Callable[[], None], before_reset: Callable[[], None]) -> None:
        self.backend, self.hooks = backend, {"before_begin": before_begin, "after_begin": after_begin,
                                             "before_reset": before_reset}

    def _hook(self, name: str) -> None:
        hook = self.hooks.pop(name, None)
        if hook is not None:
            hook()

    def begin_reset(self, *args: Any) -> bool:
        self._hook("before_begin")
        try:
            return self.backend.begin_reset(*args)
        finally:
            self._hook("after_begin")

    def reset(self) -> Any:
        self._hook("before_reset")
        return self.backend.reset()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)


def _left_over_reset(handle: Callable[[], FrontierBackend]) -> None:
    """A completed crawl whose resetting process died after its compare-and-set: "resetting" stays."""
    dead = handle()
    dead.commit(entries("old-1", "old-2"), [], [], seeded=True)
    dead.set_status("completed")
    assert dead.begin_reset("completed")
    dead.close()


def _waited(event: threading.Event) -> Callable[[], None]:
    def wait() -> None:
        assert event.wait(STEP_SECONDS), "a step of the interleaving never came"
    return wait


def test_two_parties_finishing_one_left_over_reset_do_not_both_reset(handles: Callable[[], FrontierBackend]) -> None:
    """first and second both find the left-over reset and wait it out; both try to finish it at once
    (a barrier); first's compare-and-set goes first, second's next, then first resets and a node starts
    filling the crawl; then second would reset. The node's work survives: second did not win."""
    _left_over_reset(handles)
    both_begin = threading.Barrier(2, timeout=STEP_SECONDS)
    first_began, second_began, filled = threading.Event(), threading.Event(), threading.Event()

    def after_first_began() -> None:
        both_begin.wait()
        _waited(first_began)()

    first = Paused(handles(), both_begin.wait, first_began.set, _waited(second_began))
    second = Paused(handles(), after_first_began, second_began.set, _waited(filled))
    errors: list[BaseException] = []

    def finish(party: Any, then: Callable[[], None]) -> None:
        try:
            lifecycle.reset_if_completed(party, "demo", WAIT_SECONDS, rechecks=False)
            then()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
            filled.set()

    node = handles()

    def start_filling() -> None:  # a node joins the crawl that first reset, and queues its start requests
        node.set_status("running")
        node.commit(entries("new-1", "new-2", "new-3"), [], [], seeded=True)
        filled.set()

    threads = [threading.Thread(target=finish, args=(first, start_filling)),
               threading.Thread(target=finish, args=(second, lambda: None))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * STEP_SECONDS)
    assert not errors, errors
    counts = node.counts()
    assert (counts.status, counts.queued, counts.seen, counts.seeded) == ("running", 3, 3, True), counts
    assert node.verify() == []


def test_a_reset_taken_over_from_a_stalled_party_deletes_nothing_more(handles: Callable[[], FrontierBackend]) -> None:
    """A party whose reset stalled past the wait is taken over; the new owner resets and a node fills the
    crawl again; the stalled party comes back and deletes nothing. A stale owner cannot take it over."""
    stalled, taker, node = handles(), handles(), handles()
    stalled.commit(entries("old-1", "old-2"), [], [], seeded=True)
    stalled.set_status("completed")
    assert stalled.begin_reset("completed")
    seen = taker.reset_owner()
    assert seen and taker.begin_reset("resetting", seen)
    assert not node.begin_reset("resetting", seen)  # the owner it saw is not the owner any more
    assert taker.reset() is True
    node.set_status("running")
    node.commit(entries("new-1", "new-2", "new-3"), [], [], seeded=True)
    assert stalled.reset() is False
    counts = node.counts()
    assert (counts.status, counts.queued, counts.seen) == ("running", 3, 3), counts
    assert node.reset() is True  # a reset nobody began: the operator's, unconditional
    assert node.counts().seen == 0
