"""A node's life in a crawl: joining it (a completed crawl starts anew, the node id is claimed,
leases of gone nodes come back) and forgetting nodes that are gone.

These run on the reactor's thread pool at open (they may wait for a lock or another node's
reset) and on the tick (``forget_dead``), with the backend's short call timeout. A store lost
while a node joins (restarted, failed over after the start-up check) is waited for, as one lost
mid-crawl is: every step of joining can run again (the node's own earlier registration counts as
gone, resets and reclaims are compare-and-set).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from recordhound import failpoints
from recordhound.backoff import backoff_seconds
from recordhound.exceptions import RecordhoundError
from recordhound.frontier.backend import FrontierBackend
from recordhound.frontier.nodes import claim_node_id, holder_alive, others_alive, this_host

logger = logging.getLogger(__name__)
RESET_WAIT_SECONDS = 0.2  # how often a starting node looks whether another one's reset is done
T = TypeVar("T")


class NotJoined(RecordhoundError):
    """The node gave up joining; ``reason`` is the crawl's close reason ("shutdown" when stopped)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Joined:
    node: str
    token: str
    reclaimed: int  # leases of this node id's previous process and of gone nodes, back in the queue


def join(backend: FrontierBackend, crawl: str, node_id: str, lease_seconds: float, rechecks: bool,
         forget_slots: Callable[[str], None], stopping: threading.Event | None = None) -> Joined:
    """Register this process as a node of ``crawl`` and return what earlier processes left leased."""
    reset_if_completed(backend, crawl, lease_seconds, rechecks, stopping)
    node, token = claim_node_id(backend, node_id, lease_seconds)
    forget_slots(node)  # slots a killed process of this node id left behind
    reclaimed = backend.reclaim_node(node) + forget_dead(backend, node, lease_seconds, forget_slots)
    reclaimed += backend.reclaim_expired()
    backend.set_status("running")
    return Joined(node, token, reclaimed)


def when_reachable(backend: FrontierBackend, step: Callable[[], T], retry_max_seconds: float,
                   wait_seconds: float, stopping: threading.Event) -> T:
    """``step`` (opening the store and joining), run again while the store is unreachable or busy,
    with the backoff of an outage mid-crawl (0.5 s doubling to ``retry_max_seconds``). ``NotJoined``
    once the store has been unreachable for ``wait_seconds`` (a try that starts before may wait its
    call timeout), or as soon as the crawl is stopped (``stopping``: SIGINT or SIGTERM while the
    node waits). Any other RecordhoundError (a node id in use, say) is ``NotJoined`` at once (close
    reason ``frontier_refused``); any other error is raised at once."""
    deadline, attempt = None, 0  # counted from the first failure (a reset may be waited for before)
    while True:
        attempt += 1
        try:
            return step()
        except Exception as exc:
            if not backend.is_transient(exc):
                if not isinstance(exc, RecordhoundError):
                    raise
                backend.close()  # a node id in use, a frontier file it cannot open, ...
                if isinstance(exc, NotJoined):  # with its own reason (the shop's robots.txt unavailable)
                    raise
                raise NotJoined(str(exc), "frontier_refused") from exc
            backend.close()
            if deadline is None:
                deadline = time.monotonic() + wait_seconds
            if time.monotonic() >= deadline:
                raise NotJoined(f"the frontier store stayed unreachable for {wait_seconds:.0f} s while this "
                                f"node was joining the crawl: {exc}", "frontier_unreachable") from None
            delay = backoff_seconds(attempt, retry_max_seconds)
            logger.warning("The frontier store is unreachable while this node joins the crawl (%s); "
                           "trying again in %.1f s", exc, delay)
        if stopping.wait(delay):  # logged here: the reactor that would report the error is stopping
            logger.warning("The crawl was stopped while this node waited for the frontier store: it did not join")
            raise NotJoined("the crawl was stopped while this node waited for the frontier store", "shutdown")


def forget_dead(backend: FrontierBackend, me: str, lease_seconds: float, forget_slots: Callable[[str], None]) -> int:
    """Return the leases and politeness slots of registered nodes that are gone (no heartbeat, or
    a dead pid on this host), then unregister them; returns how many leases came back."""
    host, now = this_host(), backend.now()
    reclaimed = 0
    for node, info in backend.nodes().items():
        if node == me or holder_alive(info, host, now, lease_seconds):
            continue
        forget_slots(node)
        reclaimed += backend.reclaim_node(node)
        backend.leave(node, info.token)  # only if it is still that dead process's registration
        logger.info("Node %s is gone (pid %d on %s): its leases and slots are back", node, info.pid, info.host)
    return reclaimed


def reset_if_completed(backend: FrontierBackend, crawl: str, lease_seconds: float, rechecks: bool,
                       stopping: threading.Event | None = None) -> None:
    """A completed crawl starts anew: exactly one of the nodes starting on it resets it
    (compare-and-set on its status), the others wait until the reset is done. Not one with rechecks
    scheduled (``rechecks``: the profile has a recrawl schedule): the next run fetches what is due; a
    crawl completed before its profile had one has none scheduled, and starts anew. A reset whose
    owner stays the same for ``lease_seconds`` was left unfinished: one of the nodes waiting takes it
    over (compare-and-set on its owner too) once no node of the crawl is alive, the others wait for that
    one; a node whose own reset was taken over meanwhile (it stalled) deletes no more, and waits for it too.
    A stop (``stopping``: SIGINT or SIGTERM) ends the wait: ``NotJoined``, nothing deleted."""
    waited, owner, said = 0.0, None, False
    stopping = stopping or threading.Event()  # (none given: never set, its wait a sleep)
    while True:
        counts = backend.counts()
        status = counts.status
        if status == "completed" and rechecks and (counts.scheduled or counts.due or counts.leased_total
                                                   or counts.queued or counts.waiting):  # rechecks in hand too
            logger.info("Crawl %r has a recrawl schedule: fetching what is due", crawl)
            return
        if status == "completed" and not others_alive(backend, lease_seconds):
            if backend.begin_reset("completed"):
                failpoints.hit("frontier.reset_begun")
                logger.info("Crawl %r was completed; starting it anew", crawl)
                if backend.reset():
                    return
        elif status != "resetting":
            return
        elif (seen := backend.reset_owner()) != owner:  # a reset begun or taken over since: waited for anew
            waited, owner = 0.0, seen
        elif waited >= lease_seconds and others_alive(backend, lease_seconds):  # no reset to finish under them
            if not said:
                said = True
                logger.warning("A reset of crawl %r was left unfinished while other nodes of it run: this node "
                               "waits for them to leave", crawl)
        elif waited >= lease_seconds and backend.begin_reset("resetting", seen):
            logger.warning("A reset of crawl %r was left unfinished; finishing it", crawl)
            if backend.reset():
                return
        if stopping.wait(RESET_WAIT_SECONDS):  # off the reactor: open() runs this in a thread
            raise NotJoined("the crawl was stopped while this node waited for its reset", "shutdown")
        waited += RESET_WAIT_SECONDS


def claimant_alive(backend: FrontierBackend, token: str, lease_seconds: float) -> bool:
    """Whether the node whose token claimed the start requests is still alive."""
    host, now = this_host(), backend.now()
    return any(info.token == token and holder_alive(info, host, now, lease_seconds)
               for info in backend.nodes().values())
