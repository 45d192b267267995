"""The scheduler's tick, which cannot die: it writes what is buffered, returns the leases of
gone nodes, re-syncs the lease book with the store, and brings the crawl back after an outage.

Every store call of the tick is inside its error handling: an outage pauses the crawl and is
retried with backoff; the store counts as back only after a real round trip (``probe``), and
then the lease book is reconciled with it before the crawl resumes. A reconnect the client made
silently (``FrontierBackend.connections`` moved) or a lease the renewer found gone re-syncs too:
the store may have come back from an older snapshot. Any other error is logged, counted, and
handled as the scheduler handles store errors (a crawl that cannot go on is closed); the tick
itself goes on.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from twisted.internet import task

from recordhound import failpoints
from recordhound.exceptions import RecordhoundError
from recordhound.frontier import engine_access, lifecycle
from recordhound.frontier.backend import Counts, FrontierBackend, Lease
from recordhound.frontier.factory import make_backend
from recordhound.frontier.registry import FRONTIER_ID, STAT
from recordhound.frontier.renewer import Renewer
from recordhound.frontier.writes import SeenCache
from recordhound.pause import pauses

if TYPE_CHECKING:
    from recordhound.frontier.scheduler import FrontierScheduler

logger = logging.getLogger(__name__)
COUNTS_TTL_SECONDS = 0.2  # one tick: a node sees the crawl drained at most ~0.4 s after the last ack
RECLAIM_EVERY_SECONDS = 5.0  # also how often the lease book is reconciled with the store
ORPHAN_TICKS = 3  # ticks the engine must be idle before a handed-out request counts as orphaned
EXTRA_LEASE_SECONDS = 1.0  # while every request in hand waits for its host, lease more this often
EXTRA_LEASE_BATCHES = 4  # ... up to this many lease batches in hand


class Upkeep:
    def __init__(self, scheduler: FrontierScheduler) -> None:
        self.s = scheduler
        self.seen = SeenCache(scheduler.config.seen_cache)  # fingerprints known to be in the seen-set
        self.starved = False  # the engine asked and got nothing
        self.idle_marked = False  # a following node's idle spell reached its crash point
        self._counts: tuple[float, Counts] | None = None
        self._loop: task.LoopingCall | None = None
        self._renewer: Renewer | None = None
        self._clock = {"reclaim": 0.0, "extra_lease": 0.0, "progress": time.monotonic()}
        self._marks = {"connections": 0, "orphan_ticks": 0, "rechecked": 0}
        self._crawl = ""

    def start(self, crawl: str) -> None:
        s = self.s
        assert s.backend is not None
        self._crawl = crawl
        self._marks["connections"] = s.backend.connections()
        self._renewer = Renewer(lambda: self._second_backend(crawl), s.node, s.token, s.config.lease_seconds)
        self._renewer.start()
        self._loop = task.LoopingCall(self.tick)
        self._loop.start(s.config.flush_seconds, now=False)

    def _second_backend(self, crawl: str) -> FrontierBackend:
        backend = make_backend(self.s.config, crawl, timeout=self.s.config.lease_seconds / 4)
        backend.open()
        return backend

    def stop(self) -> None:
        self.stop_tick()
        if self._renewer is not None:
            self._renewer.stop()

    def stop_tick(self) -> None:
        """The tick only: a close that waits for the store keeps its leases renewed meanwhile."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()

    def publish_leases(self) -> None:
        """Tell the renewer which leases this process holds (it renews exactly these)."""
        if self._renewer is not None:
            self._renewer.held = self._held()

    def _held(self) -> list[Lease]:
        """Every lease this process holds: in its book, and those whose outcome is not written yet."""
        return self.s.book.leases() + self.s.buffer.leases()

    def written(self) -> None:
        self._counts = None

    def counts(self) -> Counts | None:
        now = time.monotonic()
        if self._counts is None or now - self._counts[0] > COUNTS_TTL_SECONDS:
            if self.s.outage.down or self.s.backend is None:
                return None
            try:
                self._counts = (now, self.s.backend.counts())
            except Exception as exc:  # the backend's client raises its own error types
                self.s.backend_error(exc)
                return None
        return self._counts[1]

    def may_lease_extra(self, in_hand: int) -> bool:
        """Lease more while the hand is blocked: at most every EXTRA_LEASE_SECONDS, up to 4 batches."""
        now = time.monotonic()
        if (self.s.outage.down or now - self._clock["extra_lease"] < EXTRA_LEASE_SECONDS
                or in_hand >= EXTRA_LEASE_BATCHES * self.s.config.lease_batch):
            return False
        self._clock["extra_lease"] = now
        return True

    # --- the tick ---------------------------------------------------------------------

    def tick(self) -> None:
        try:
            self._tick()
        except Exception as exc:  # noqa: BLE001 - the tick never dies; the scheduler decides what the error means
            self.s.inc("tick_errors")
            self.s.backend_error(exc)

    def _tick(self) -> None:
        s = self.s
        assert s.backend is not None
        if self._renewer is not None and self._renewer.taken:
            raise RecordhoundError(f"node id {s.node} was registered by another process while this one ran; "
                                   "give each crawler process its own RECORDHOUND_NODE_ID")
        recovering = s.outage.down
        if recovering:
            if not s.outage.due():
                return
            self.reach_again()
        s.flush()  # outcomes first: a lease whose ack is written is not the store's to return
        if s.gate is not None:
            s.gate.settle()  # slots freed during an outage, or brought back by a store regression
        now = time.monotonic()
        if now - self._clock["reclaim"] >= RECLAIM_EVERY_SECONDS:
            self._reclaim()  # re-syncs too
            self._clock["reclaim"] = now
        elif recovering or s.backend.connections() != self._marks["connections"] or self._renewer_found_gone():
            self.resync()
        if recovering:
            s.outage.recovered()
        if s.book.in_hand and engine_access.paused(s.crawler):
            self._return_unstarted()
        s.suspects.check()
        self.publish_leases()
        if self.starved and (counts := self.counts()) is not None and (counts.to_fetch or counts.drained):
            engine_access.wake(s.crawler)  # work arrived, or the crawl is over: no need to wait for the heartbeat
        self._fail_orphans()
        if s.policy.follow:
            self._follow(now)

    def reach_again(self) -> None:
        """After an outage: a real round trip (or the outage goes on), then, for an outage longer than
        the lease, what this process holds renewed before anyone, this node included, returns it as
        expired (what another node took already is gone)."""
        s = self.s
        assert s.backend is not None
        s.backend.probe()
        s.backend.renew(s.node, self._held(), s.config.lease_seconds)

    def _renewer_found_gone(self) -> bool:
        return self._renewer is not None and self._renewer.take_gone()

    def resync(self) -> None:
        """Make the lease book agree with the store (after an outage, a reconnect, a lost lease)."""
        s = self.s
        assert s.backend is not None
        connections = s.backend.connections()
        reconciled = s.backend.reconcile(s.node, self._held(), s.token)
        if reconciled.taken:
            raise RecordhoundError(f"node id {s.node} was registered by another process while this one stalled; "
                                   "its leases are that process's now: this one stops")
        if connections != self._marks["connections"] or reconciled.released or reconciled.gone:
            self.seen.clear()  # the store may have lost what this process wrote last
            if s.gate is not None:
                s.gate.recheck()  # its slots too (the next tick)
        self._marks["connections"] = connections
        for lease in reconciled.gone:
            if s.gate is not None:
                s.gate.free_lease(lease.id)
        dropped = s.book.drop(reconciled.gone)
        if reconciled.released or dropped:
            logger.warning("Re-synced with the frontier store: %d leases it gave this node were returned to the "
                           "queue, %d this node held are no longer in it (their outcomes are not written)",
                           reconciled.released, dropped)
        s.inc("released", reconciled.released)
        s.inc("leases_lost_by_store", dropped)
        counts = s.backend.counts()
        if s.seeding.lost(counts):
            for entry in s.seeding.again():
                s.buffer.add(entry)
            s.buffer.seed = True
        self._counts = None

    def regressed(self) -> None:
        """The store counts fewer of this node's commits than it made: it came back from an older
        snapshot. Everything the held requests (and those whose outcome waits) queued is sent
        again (the seen-set drops what survived), the lease book is re-synced, then the write goes on."""
        s = self.s
        logger.warning("The frontier store lost writes of this node (restored from an older snapshot?); "
                       "re-sending what the requests in hand queued before their outcomes are written")
        s.inc("store_regressions")
        if s.gate is not None:
            s.gate.recheck()
        self.seen.clear()
        for entry in s.book.children() + s.buffer.kept:
            if entry.fingerprint not in s.buffer.fingerprints:
                s.buffer.add(entry)
        self.resync()

    def _reclaim(self) -> None:
        """Leases of nodes that died or expired come back; the book is checked against the store."""
        s = self.s
        assert s.backend is not None
        gate = s.gate
        forget = (lambda node: gate.forget(f"{self._crawl}:{node}")) if gate else (lambda _: None)
        reclaimed = s.backend.reclaim_expired() + lifecycle.forget_dead(
            s.backend, s.node, s.config.lease_seconds, forget)
        s.inc("reclaimed", reclaimed)
        self.resync()

    def _return_unstarted(self) -> None:
        """A paused engine starts nothing (the product store is behind or down): the requests leased
        and not yet handed to it go back to the queue, no attempt counted, so other nodes fetch them
        meanwhile; ``next_request`` leases again on resume. A pause shorter than a tick returns nothing."""
        s = self.s
        assert s.backend is not None
        leases = [held.lease for request in s.book.in_hand if (held := s.book.get(request.meta[FRONTIER_ID]))]
        released = s.backend.release(leases)  # an outage raises: the tick's handler pauses; they stay held
        s.book.drop(leases)  # those the store no longer has (taken over) are not this process's either
        if released and not s.crawler.stats.get_value(STAT + "released_while_paused"):
            logger.info("The crawl is paused (%s): %d leased requests not yet started went back to the queue "
                        "for other nodes; it leases again when it resumes (counted in %sreleased_while_paused)",
                        ", ".join(sorted(pauses(s.crawler).reasons)) or "by hand", released, STAT)
        s.inc("released", released)
        s.inc("released_while_paused", released)
        s.suspects.queued()

    def _fail_orphans(self) -> None:
        """Handed-out requests the engine finished without a callback or errback (an
        IgnoreRequest with no errback, say) would hold their leases forever: fail them."""
        outcomes = self.s.outcomes
        if not engine_access.engine_idle(self.s.crawler) or not len(outcomes):
            self._marks["orphan_ticks"] = 0
            return
        self._marks["orphan_ticks"] += 1
        if self._marks["orphan_ticks"] >= ORPHAN_TICKS:
            for frontier_id in outcomes.ids():
                outcomes.failed(frontier_id, "the engine finished with it without a callback or errback")
            self._marks["orphan_ticks"] = 0

    def _follow(self, now: float) -> None:
        s = self.s
        if self.starved and not self.idle_marked and self._idle():
            self.idle_marked = True  # once per idle spell
            failpoints.hit("frontier.follow_idle")
        if now - self._clock["progress"] >= s.config.progress_seconds:
            self._log_progress(now)

    def _idle(self) -> bool:
        """Nothing in hand, in flight or unwritten (a following node between due pages)."""
        s = self.s
        return not (len(s.book) or len(s.outcomes) or s.buffer) and engine_access.engine_idle(s.crawler)

    def _log_progress(self, now: float) -> None:
        """A following node says what it re-checked and what comes due."""
        counts = self.counts()
        if counts is None:
            return
        stats, elapsed = self.s.crawler.stats.get_stats(), now - self._clock["progress"]
        rechecked = stats.get(STAT + "rechecked", 0) - self._marks["rechecked"]
        self._marks["rechecked"] = stats.get(STAT + "rechecked", 0)
        logger.info("Following: %d pages re-checked in the last %.0f s (%d unchanged, %d changed in all); "
                    "%d due now, %d leased, %d due in the next hour, %d scheduled later",
                    rechecked, elapsed, stats.get(STAT + "unchanged", 0), stats.get(STAT + "changed", 0),
                    counts.to_fetch, counts.leased_total, counts.due_within_hour,
                    counts.scheduled - counts.due_within_hour)
        self._clock["progress"] = now
