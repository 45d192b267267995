"""Suspects: the pages a node held when it died, tried one at a time.

A node killed with its leases leaves no word of which page, if any, killed it: every page it held
comes back a *suspect* (its lost count 1, ``FrontierBackend.try_alone``). The scheduler hands
suspects to the engine one at a time and tells the store first which one it is trying; a death
while a suspect is tried counts against that page only. A page that kills its process each time it
is parsed (or its items stored) is failed after ``RECORDHOUND_FRONTIER_MAX_ATTEMPTS`` deaths
("leased N times without an outcome") while its neighbours are crawled; kills that land while a
page merely sits among a node's leases (in hand, or in flight while another page is tried) never
fail it.

A try lasts until the page's outcome is written to the store: its callback output exhausted, its
items stored (or it failed, or was replaced by a retry or a redirect), then the write that holds its
ack, made at once. A death anywhere in that window is the page's doing: it may kill its process
while parsed or while its items are stored. A try also ends when the page is out of the engine
without an outcome (its lease taken back by the store, the engine lost it). Fresh pages go on beside
the one tried at full concurrency: a node holding suspects leases fresh pages only, so it holds one
lease batch of suspects at most and the others stay queued for other nodes to try beside it;
suspects wait for each other on one node (docs/concepts/frontier.md says what this costs).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from recordhound import signals
from recordhound.frontier import engine_access
from recordhound.frontier.registry import FRONTIER_ID, STAT

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from recordhound.frontier.backend import Lease
    from recordhound.frontier.scheduler import FrontierScheduler

logger = logging.getLogger(__name__)
FRESH_RESCAN_SECONDS = 1.0  # a fresh-only lease found none: read past the suspects again this much later


class Suspects:
    def __init__(self, scheduler: FrontierScheduler) -> None:
        self.s = scheduler
        self.trying: Lease | None = None
        self.store_opening = False  # the product store has not opened yet: no suspect is tried (``held_back``)
        self._rescan_at = 0.0  # a fresh-only lease came back short: not again before then (monotonic)

    def fresh_only(self) -> bool | None:
        """How this node leases: fresh pages only while it holds suspects (the others stay queued for
        other nodes); None: not at all now (a fresh-only lease just came back short: the queue ahead
        is suspects, read past again after ``FRESH_RESCAN_SECONDS`` or once this node queued pages)."""
        if not self.s.book.suspects and self.trying is None:
            return False
        return None if time.monotonic() < self._rescan_at else True

    def leased_fresh(self, short: bool) -> None:
        self._rescan_at = time.monotonic() + FRESH_RESCAN_SECONDS if short else 0.0

    def queued(self) -> None:
        """This node put pages in the queue (new, retried, given back): a fresh-only lease may find them."""
        self._rescan_at = 0.0

    def connect(self, crawler: Crawler) -> None:
        crawler.signals.connect(self._store_opening, signal=signals.store_opening)
        crawler.signals.connect(self._store_opened, signal=signals.store_opened)

    def _store_opening(self) -> None:
        self.store_opening = True

    def _store_opened(self) -> None:
        """A try now lasts as long as its page's own work: its items are stored at once, not after the
        writer's start (before, kills that landed while a node started were each counted against the one
        suspect it was trying, and a few in a row failed a good page)."""
        self.store_opening = False
        if self.s.book.suspects:
            engine_access.wake(self.s.crawler)

    def held_back(self) -> set[int]:
        """The requests in hand the gate must not hand out now: every suspect while one is tried, or
        while the product store opens."""
        return self.s.book.suspects if self.trying is not None or self.store_opening else _NONE

    def start(self, request: Request) -> bool:
        """``request``, just taken from the hand, goes to the engine: a suspect is tried alone, the
        store told first. False: the store could not be told (an outage): its slot is freed and it
        is back in hand."""
        s = self.s
        frontier_id = request.meta[FRONTIER_ID]
        if frontier_id not in s.book.suspects:
            return True
        held = s.book.get(frontier_id)
        assert s.backend is not None and held is not None  # the book drops a suspect with its lease
        try:
            s.backend.try_alone(s.node, held.lease)
        except Exception as exc:  # the backend's client raises its own error types
            s.backend_error(exc)
            if s.gate is not None:
                s.gate.free(request)
            s.book.in_hand.appendleft(request)
            return False
        s.book.suspects.discard(frontier_id)
        self.trying = held.lease
        s.crawler.signals.send_catch_log(signals.store_eagerly, eager=True)  # its items are waited on
        s.outcomes.watch(frontier_id, self._decided)
        if not s.crawler.stats.get_value(STAT + "suspects_tried"):
            logger.info("Pages held by a node that died are tried one at a time, so that a page that kills "
                        "the crawler is told apart from its neighbours (counted in %ssuspects_tried)", STAT)
        s.inc("suspects_tried")
        return True

    def _decided(self) -> None:
        """The outcome of the page tried alone is known, in the write buffer: written now, the try
        ends (the store down: the tick's write, then its ``check``, end it)."""
        self.s.flush_safely()
        self.check()

    def ended(self) -> None:
        """The outcome of the page tried alone is written (or it left): the store forgets the try."""
        s = self.s
        if self.trying is None:
            return
        self.trying = None
        s.outcomes.watch(None, None)
        s.crawler.signals.send_catch_log(signals.store_eagerly, eager=False)
        if not s.outage.down and s.backend is not None:
            try:
                s.backend.try_alone(s.node, None)
            except Exception as exc:  # noqa: BLE001 - the mark stays; it names this lease only (fenced)
                s.backend_error(exc)
        if s.book.suspects:
            engine_access.wake(s.crawler)

    def check(self) -> None:
        """Is the try over? Its outcome written, or its page out of the engine without one (its lease
        taken back by the store, or the engine dropped it): a page still in the engine may yet kill
        its process, so no other suspect is tried until it is out (its stale mark charges nobody)."""
        lease = self.trying
        if lease is not None and lease.id not in self.s.outcomes and lease not in self.s.buffer.leases():
            self.ended()  # out of the engine, its outcome not waiting to be written


_NONE: set[int] = set()  # nothing held back (never changed)
