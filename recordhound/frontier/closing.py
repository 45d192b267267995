"""A node leaves the crawl at its close: its last outcomes written, its unstarted leases returned (a
graceful return: no attempt counted), its politeness slots returned (those whose return failed in an
outage too), the crawl marked completed when it drained, the node out of the crawl's registry.

A store that refuses or cannot be reached then (Redis full, restarting, failing over) is an outage,
as it is mid-crawl: the close waits for it and says so, trying again with the outage's backoff, after
a real round trip and with what the node holds renewed first (``Upkeep.reach_again``); the lease
renewer goes on meanwhile. Before, the first refused write raised out of the scheduler's close
whenever no item was left to wait for the store (Scrapy logged "Scheduler close failure" with a
traceback): the leases were left to expire and the node stayed registered. A stop during the wait
waits for it (``extensions/whole_close.py``); a second one stops the reactor under it and the
process leaves at once (``commands/crawl.py``): its leases expire and what it did not ack is fetched
again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from twisted.internet import task
from twisted.internet.defer import Deferred, inlineCallbacks

from recordhound import failpoints
from recordhound.frontier.registry import STAT

if TYPE_CHECKING:
    from collections.abc import Generator

    from recordhound.frontier.scheduler import FrontierScheduler

logger = logging.getLogger(__name__)
WAIT_SECONDS = 0.1  # how often a waiting close looks whether the outage's backoff has passed


def leave(s: FrontierScheduler, reason: str) -> Deferred[None] | None:
    """Close ``s``'s part of the crawl now, or (the store unreachable) a Deferred fired once it could.
    The lease renewer goes on until then: a wait longer than the lease does not lose what the node holds."""
    s.upkeep.stop_tick()
    if s.gate is not None:
        s.gate.stop_waking()
    if s.backend is None or s.phase == "new":
        s.upkeep.stop()
        if s.gate is not None:
            s.gate.close()
        return None  # opening failed: nothing of ours to write back
    try:
        left = s.phase == "broken" or _written_back(s, reason)  # broken: leases come back at restart (or expire)
    except BaseException:
        _closed(s)
        raise
    if left:
        _closed(s)
        return None
    logger.warning("Closing (%s): the frontier store does not take this node's last writes; waiting for it "
                   "(%d outcomes and %d new requests to write, %d leases to return; Ctrl-C again to leave them: "
                   "the leases expire and the pages not acked are fetched again)",
                   reason, s.buffer.outcomes, len(s.buffer.entries), len(s.book))
    return _written_back_later(s, reason)


@inlineCallbacks
def _written_back_later(s: FrontierScheduler, reason: str) -> Generator[Deferred[None], None, None]:
    try:
        while not _written_back(s, reason):
            yield task.deferLater(s.engine_signals.clock, WAIT_SECONDS, lambda: None)
    finally:
        _closed(s)


def _closed(s: FrontierScheduler) -> None:
    assert s.backend is not None
    s.upkeep.stop()
    s.backend.close()
    if s.gate is not None:
        s.gate.close()


def _written_back(s: FrontierScheduler, reason: str) -> bool:
    """Write the close; False when the store is down (tried again once the outage's backoff passed).
    Any error other than an outage raises (Scrapy logs it as a failed close)."""
    assert s.backend is not None
    try:
        if s.outage.down:
            if not s.outage.due():
                return False
            s.upkeep.reach_again()
        _write_back(s, reason)
    except Exception as exc:  # the backend's client raises its own error types
        if not s.backend.is_transient(exc):
            raise  # the close fails (Scrapy logs it), as it did before
        s.backend_error(exc)  # an outage: counted, said, retried with backoff
        return False
    s.outage.recovered("the close is written")
    return True


def _write_back(s: FrontierScheduler, reason: str) -> None:
    """Each step may be tried again after an outage: the book is cleared only once its leases were returned."""
    assert s.backend is not None
    s.flush()
    s.outcomes.forget()
    released = s.backend.release(s.book.leases())
    s.book.clear()
    if s.gate is not None:
        s.gate.return_all()  # the politeness slots too: one whose return failed in an outage is still held
    failpoints.hit("frontier.close_released")
    s.inc("released", released)
    counts = s.backend.counts()
    if s.crawler.stats is not None:  # the whole crawl's, for the health check of a short run (extensions/health.py)
        s.crawler.stats.set_value(STAT + "crawl_done", counts.done)
        s.crawler.stats.set_value(STAT + "crawl_failed", counts.failed)
    if reason == "finished" and counts.drained:
        s.backend.set_status("completed")
    s.upkeep.stop()  # the renewer first: a round after the node left would register it again
    s.backend.leave(s.node, s.token)
    logger.info("Frontier closed (%s): %d unstarted leases returned; %d queued, %d done, %d failed",
                reason, released, counts.queued, counts.done, counts.failed)
