"""recordhound's Scrapy scheduler: lease → hand to the engine → ack once the work is stored.

The scheduler is the glue of parts that each have one home:

- ``LeaseBook`` (leasebook.py): what this process holds, with tokens; a cache of the store.
- ``WriteBuffer`` (writes.py): new requests and lease outcomes not yet written; one commit each.
- ``HostGate`` (hostgate.py): politeness slots and blocked hosts.
- ``Outage`` (outage.py) and ``EnginePause`` (pause.py): the store's reachability, and the one
  owner of pausing the engine.
- ``Upkeep`` (upkeep.py): the tick that never dies: writes, renew reports, reconcile, reclaim.
- ``Opening`` (opening.py): the policy, the store and the gate; joining off the reactor.
- ``Suspects`` (suspects.py): pages held by a node that died, tried one at a time.
- lifecycle.py: joining the crawl and forgetting gone nodes; recrawl.py: recheck planning;
  engine_signals.py: what Scrapy's signals tell about each request (responses, items, drops).

``next_request`` leases a batch for this node and hands requests out one by one; ``Outcomes``
says when a handed-out request is done or failed; its outcome is buffered and written before
anything that depends on it. Every lease ends in one recorded outcome (backend.py's table).
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING

from scrapy import Request, Spider

from recordhound.config import FrontierConfig
from recordhound.errors import record_error, stop_crawl
from recordhound.frontier import closing, engine_access, registry, serialize
from recordhound.frontier.backend import Entry, Failure, FrontierBackend, Lease, Leased, Recheck
from recordhound.frontier.hostgate import HostGate
from recordhound.frontier.leasebook import Held, LeaseBook
from recordhound.frontier.opening import Opening
from recordhound.frontier.outage import Outage
from recordhound.frontier.outcomes import Outcomes
from recordhound.frontier.policy import CrawlPolicy
from recordhound.frontier.registry import FRONTIER_ID, PARENT_ID, STAT
from recordhound.frontier.retry import TAKEN_BACK, Stale
from recordhound.frontier.seeding import Seeding
from recordhound.frontier.engine_signals import EngineSignals
from recordhound.frontier.suspects import Suspects
from recordhound.frontier.upkeep import Upkeep
from recordhound.frontier.writes import Flushed, WriteBuffer
from recordhound.frontier import recrawl
from recordhound.pause import pauses

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

    from recordhound.frontier.dupefilter import FrontierDupeFilter
    from recordhound.frontier.retry import Problem

logger = logging.getLogger(__name__)
REDIRECT_CHAIN = ("redirect_urls", "redirect_times", "redirect_ttl", "redirect_reasons")  # Scrapy's RedirectMiddleware


class FrontierScheduler:
    def __init__(self, crawler: Crawler, config: FrontierConfig, dupefilter: FrontierDupeFilter) -> None:
        self.crawler, self.config, self.df = crawler, config, dupefilter
        self.backend: FrontierBackend | None = None
        self.spider: Spider | None = None
        self.node, self.token = "", ""
        self.outcomes = Outcomes(self._acked, self._failed)
        self.book = LeaseBook()
        self.buffer = WriteBuffer()
        self.policy = CrawlPolicy.from_settings(crawler.settings)
        self.gate: HostGate | None = None
        self.outage = Outage(pauses(crawler), config.retry_max_seconds)
        self.seeding = Seeding()
        self.upkeep = Upkeep(self)
        self.engine_signals = EngineSignals(self)
        self.opening = Opening(self)
        self.suspects = Suspects(self)
        self.phase = "new"  # new | open | broken (a non-transient store error: the crawl is closing)
        self.writes = 0  # this node's commits the store counted at the last one (it must not count fewer)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        from scrapy.utils.misc import build_from_crawler, load_object

        dupefilter = build_from_crawler(load_object(crawler.settings["DUPEFILTER_CLASS"]), crawler)
        scheduler = cls(crawler, FrontierConfig.from_settings(crawler.settings), dupefilter)
        scheduler.engine_signals.connect(crawler)  # Scrapy keeps weak references: the scheduler holds it
        scheduler.opening.connect(crawler)
        scheduler.suspects.connect(crawler)
        return scheduler

    # --- lifecycle --------------------------------------------------------------------

    def open(self, spider: Spider) -> Deferred[None]:
        return self.opening.open(spider)

    def opened(self, crawl: str) -> None:
        """Joined: the crawl's work starts."""
        self.phase = "open"
        registry.register(self.crawler, self)
        self.upkeep.start(crawl)

    def close(self, reason: str) -> Deferred[None] | None:
        """The node leaves the crawl (``closing.py``); a Deferred while the store is unreachable."""
        return closing.leave(self, reason)

    # --- the Scrapy scheduler interface -----------------------------------------------

    def __len__(self) -> int:
        counts = self.upkeep.counts()
        return len(self.book.in_hand) + (counts.to_fetch if counts else 0)

    def has_pending_requests(self) -> bool:
        if self.policy.follow and self.phase != "broken":
            return True  # following: pages come due; SIGINT/SIGTERM ends the node
        if len(self.book) or len(self.outcomes) or self.outage.down:
            return True  # work in this process: no need to ask the backend
        if not self.flush_safely():
            return True
        counts = self.upkeep.counts()
        return counts is None or not counts.drained

    def enqueue_request(self, request: Request) -> bool:
        parent = request.meta.get(FRONTIER_ID)
        child_of = request.meta.pop(PARENT_ID, None)
        replacing = parent if parent is not None and self.outcomes.is_downloading(parent) else None
        if replacing is not None and replacing not in self.book:
            # a retry or redirect of a request whose lease the store took back while it downloaded: the
            # store has the request queued again, so what stands for it is not this process's to queue
            self.inc("stale_replacements")
            self.outcomes.replaced(replacing)  # nothing to write: the book no longer holds it
            return False
        if replacing is not None and _redirect_loop(request):
            # the hop back into its own chain is not work (were its URL unseen, after the store came
            # back from an older snapshot, it would loop once more and fail a second time)
            chain = " → ".join([*request.meta["redirect_urls"], request.url])
            self.outcomes.failed(replacing, f"redirect_loop: {chain}")
            if child_of is not None:
                self.outcomes.child_enqueued(child_of)  # settled, as a duplicate is
            return False
        if replacing is not None and request.meta.get("redirect_urls"):
            for name in recrawl.CONDITIONAL:  # Scrapy copied the redirected recheck's: they name another page
                request.headers.pop(name, None)
        entry = self._buffer(request, start=parent is None and child_of is None)
        if replacing is not None:
            # a retry or redirect stands for its parent now (even when it is a duplicate);
            # the parent's ack is written after the buffer that holds its replacement
            self.outcomes.replaced(replacing)
        if child_of is not None:
            if entry is not None and entry.fingerprint is not None and (held := self.book.get(child_of)):
                held.children.append(entry)  # sent again if the store loses it before the parent's ack
            self.outcomes.child_enqueued(child_of)  # buffered: written before its parent's ack
        if len(self.buffer.entries) >= self.config.push_batch:
            self.flush_safely()
        return entry is not None

    def _buffer(self, request: Request, start: bool) -> Entry | None:
        assert self.spider is not None
        fingerprint = None if request.dont_filter else self.df.fingerprint(request)
        if fingerprint is not None and (fingerprint in self.buffer.fingerprints or fingerprint in self.upkeep.seen):
            self.inc("duplicates")
            return None
        try:
            payload = serialize.dumps(request, self.spider)
        except serialize.UnserializableRequest as exc:
            self.inc("unserializable")
            record_error(self.crawler, "unserializable_request", request.url, str(exc))
            return None
        entry = Entry(fingerprint, request.priority, payload)
        self.buffer.add(entry)
        if start:
            self.seeding.keep(entry)
        self.crawler.stats.inc_value("scheduler/enqueued")
        return entry

    def next_request(self) -> Request | None:
        if self.phase == "broken" or self.gate is None or engine_access.paused(self.crawler):
            return None  # Scrapy's loop asks on until its downloader is full: paused, nothing starts or is leased
        if not self._may_take() and not self.outage.down:
            if self.buffer.entries:
                self.flush_safely()  # the engine is idle for want of what sits in our buffer
            self._lease_more()
        request = self._take_allowed()
        if (request is None and (waiting := self._may_take()) and self.suspects.fresh_only() is not None
                and self.upkeep.may_lease_extra(waiting)):
            self._lease_more()  # every request in hand waits for its host: look for other hosts' work
            request = self._take_allowed()
        if request is None:
            self.upkeep.starved = True
            return None
        self.upkeep.starved = self.upkeep.idle_marked = False
        self.outcomes.handed_out(request.meta[FRONTIER_ID])
        self.crawler.stats.inc_value("scheduler/dequeued")
        return request

    def _may_take(self) -> int:
        """How many requests in hand the gate may hand out (suspects wait while one is tried)."""
        return len(self.book.in_hand) - len(self.suspects.held_back())

    def _take_allowed(self) -> Request | None:
        assert self.gate is not None
        if self.outage.down:
            return None
        try:
            request = self.gate.take(self.book.in_hand, self.suspects.held_back())
        except Exception as exc:  # the limiter's client raises its own error types
            self.backend_error(exc)
            return None
        if request is not None and self.book.suspects and not self.suspects.start(request):
            return None  # back in hand until the store can be told
        return request

    def claim_start(self) -> str:
        """"claimed": this node writes the start requests; "seeded": they are in; "wait":
        another live node claimed them and has not finished (or the backend is down)."""
        assert self.backend is not None
        try:
            claim = self.seeding.claim(self.backend, self.token, self.config.lease_seconds)
        except Exception as exc:  # the backend's client raises its own error types
            self.backend_error(exc)
            return "wait"
        return claim

    def start_finished(self) -> None:
        """Every start request is buffered: the next write marks the crawl seeded with them."""
        self.buffer.seed = True
        self.flush_safely()

    # --- leasing ----------------------------------------------------------------------

    def _lease_more(self) -> None:
        """Lease a batch into the hand. A node holding suspects leases fresh pages only (the others
        stay queued for other nodes), and not again at once when that found too few (suspects.py)."""
        assert self.backend is not None and self.spider is not None
        if (fresh_only := self.suspects.fresh_only()) is None:
            return
        try:
            leased = self.backend.lease(self.node, self.config.lease_batch, self.config.lease_seconds, fresh_only)
        except Exception as exc:  # the backend's client raises its own error types
            self.backend_error(exc)
            return
        if fresh_only:
            self.suspects.leased_fresh(short=len(leased) < self.config.lease_batch)
        self.inc("leased", len(leased))
        busy = [entry for entry in leased if entry.id in self.book or entry.id in self.outcomes]
        if busy:  # an older lease of the same id is still in this process (the store lost or expired it):
            self._give_back(busy)  # its events could not be told apart; the entry comes back later
        for entry in leased:
            if entry in busy:
                continue
            state = recrawl.load_state(entry.state)
            self.book.hold(entry, state=state)
            if entry.lost >= self.config.max_attempts:
                self._failed(entry.id, f"leased {entry.lost} times without an outcome")
                continue
            try:
                request = serialize.loads(entry.payload, self.spider)
            except Exception as exc:  # a payload this code can no longer load
                self._failed(entry.id, f"cannot load stored request: {type(exc).__name__}: {exc}")
                continue
            request.meta[FRONTIER_ID] = entry.id
            held = self.book.get(entry.id)
            assert held is not None
            held.kind = str(request.meta.get(registry.KIND_META) or "")
            if state:  # a recheck: a fetch of its own, not the end of the redirect chain that first led here
                for key in REDIRECT_CHAIN:
                    request.meta.pop(key, None)
            own = recrawl.conditional_headers(state)
            for name in recrawl.CONDITIONAL:  # a recheck is a conditional request, with its own validators
                if name in own:
                    request.headers[name] = own[name]
                else:  # another page's, stored with a redirect by an older version: never sent
                    request.headers.pop(name, None)
            self.book.hand(request)
            if entry.lost:
                self.book.suspects.add(entry.id)  # held when a node died: tried alone (suspects.py)
        self.upkeep.publish_leases()

    def _give_back(self, entries: list[Leased]) -> None:
        assert self.backend is not None
        try:
            self.inc("released", self.backend.release([entry.lease for entry in entries]))
        except Exception as exc:  # the backend's client raises its own error types; they expire then
            self.backend_error(exc)

    # --- outcomes ---------------------------------------------------------------------

    def _end(self, frontier_id: int) -> tuple[Lease, Held] | None:
        """Take a finished request's lease out of the book (its slot freed, its children kept with
        the buffer until its outcome is written); None: the store no longer has it."""
        if self.gate is not None:
            self.gate.free_lease(frontier_id)
        ended = self.book.end(frontier_id)
        if ended is None:
            self.inc("stale_dropped")  # nothing to write
            return None
        self.buffer.kept.extend(ended[1].children)
        return ended

    def _acked(self, frontier_id: int) -> None:
        if (ended := self._end(frontier_id)) is None:
            return
        lease, held = ended
        planned = recrawl.next_state(self.policy.recrawl, held.kind, held.state, held.seen, held.keep) \
            if self.policy.recrawl.active else None
        if planned is None:
            self.buffer.acks.append(lease)
            return
        self.buffer.rechecks.append(Recheck(lease, *planned))
        self.buffer.rechecked = self.buffer.rechecked or bool(held.state)
        self.inc("rechecked" if held.state else "first_fetched")
        change = recrawl.changed(held.state, held.seen)
        if change is not None:
            self.inc("changed" if change else "unchanged")

    def _failed(self, frontier_id: int, reason: str, retry_in: float | None = None) -> None:
        if (ended := self._end(frontier_id)) is None:
            return
        lease, held = ended
        if retry_in is None and held.unanswered and (planned := recrawl.next_state(
                self.policy.recrawl, held.kind, held.state, None, held.keep)) is not None:
            logger.warning("A recheck went unanswered in every try (%s): frontier entry %d keeps its schedule, "
                           "fetched again in %.0f s",
                           reason, lease.id, planned[0])
            self.buffer.rechecks.append(Recheck(lease, *planned))  # its validators kept; its tries start again
            self.inc("recheck_unanswered")
            return
        attempt = json.dumps({"at": round(time.time(), 3), "node": self.node, "outcome": reason})
        if retry_in is None and held.tries:
            reason = f"{reason} (attempt {held.tries + 1})"
        self.buffer.failures.append(Failure(lease, reason, retry_in, attempt))

    def report(self, frontier_id: int, problem: Problem) -> float | Stale | None:
        """An errback's problem: a retry after a stored wait, a dead letter (None), or TAKEN_BACK."""
        held = self.book.get(frontier_id)
        if frontier_id not in self.outcomes:
            return None
        if held is None:  # the store took the lease back while it downloaded: it has the request queued again
            if self.outcomes.is_downloading(frontier_id):  # a download error: no output pass follows to end it
                self.outcomes.failed(frontier_id, problem.reason)  # nothing to write (stale_dropped)
            return TAKEN_BACK  # an error response's output pass ends it (until then the id is not leased again)
        retry_in = self.policy.retry.retry_in(held.tries + 1, problem)
        # a recheck the shop did not answer (down, overloaded) in all its tries stays on the schedule: a
        # dead letter would take a stored page off it for good (its fingerprint is seen: no link brings it back)
        held.unanswered = retry_in is None and problem.transient and bool(held.state)
        self.outcomes.failed(frontier_id, problem.reason, retry_in)
        return retry_in

    # --- writing ----------------------------------------------------------------------

    def flush(self) -> None:
        assert self.backend is not None
        flushed = self._write()
        if flushed is not None and flushed.committed.regressed:
            self.writes = flushed.committed.writes
            self.upkeep.regressed()  # re-sends what the store lost, then writes again
            flushed = self._write()
        if flushed is None or flushed.committed.regressed:
            return
        self._written(flushed)

    def _write(self) -> Flushed | None:
        assert self.backend is not None
        fingerprints, seeding = self.buffer.fingerprints, self.buffer.seed
        flushed = self.buffer.flush(self.backend, self.node, self.writes)
        if flushed is None or flushed.committed.regressed:
            return flushed
        self.writes = flushed.committed.writes
        self.upkeep.seen.update(fingerprints)
        self.upkeep.written()
        if seeding:
            self.seeding.written = True
        return flushed

    def _written(self, flushed: Flushed) -> None:
        committed = flushed.committed
        if committed.queued or flushed.retried:
            self.suspects.queued()
        self.inc("queued", committed.queued)
        self.inc("duplicates", flushed.queued_offered - committed.queued)
        self.inc("acked", flushed.acked)
        self.inc("retried", flushed.retried)
        self.inc("failed", flushed.failed)
        if committed.refused:
            self._stale(committed.refused)

    def _stale(self, refused: int) -> None:
        if not self.crawler.stats.get_value(STAT + "stale_refused"):
            logger.warning("%d acks or failures of this node were refused: their leases had expired "
                           "and were taken over (the node stalled); the new holders redo that work", refused)
        self.inc("stale_refused", refused)

    def flush_safely(self) -> bool:
        if self.outage.down:
            return False  # the tick writes it when the store is back
        try:
            self.flush()
        except Exception as exc:  # the backend's client raises its own error types
            self.backend_error(exc)
            return False
        return True

    def backend_error(self, exc: Exception) -> None:
        """An outage pauses and retries; anything else is a bug or bad data: fail loudly."""
        assert self.backend is not None
        if self.backend.is_transient(exc):
            self.inc("backend_errors")
            self.outage.failed(exc)
            return
        if self.phase == "broken":
            return
        self.phase = "broken"
        logger.error("Frontier error that retrying cannot fix; closing the crawl", exc_info=exc)
        stop_crawl(self.crawler, f"frontier: {type(exc).__name__}: {exc}", "frontier_error")

    def inc(self, name: str, count: int = 1) -> None:
        if count and self.crawler.stats is not None:
            self.crawler.stats.inc_value(STAT + name, count)


def _redirect_loop(request: Request) -> bool:
    """A redirect back to a URL of its own chain (Scrapy's RedirectMiddleware keeps the chain)."""
    return request.url in request.meta.get("redirect_urls", ())
