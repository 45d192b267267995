"""recordhound's Scrapy scheduler: lease → hand to the engine → ack once the work is stored.

``next_request`` leases a batch of requests for this node (owner + expiry) and hands them out
one by one. ``enqueue_request`` buffers new requests; the buffer is written (seen-set and
queue in one atomic step) before any ack that depends on it. ``Outcomes`` tells when a
handed-out request is done or failed. A tick renews this node's leases, returns expired leases
of dead nodes, and writes what is buffered. When the backend is unreachable, the engine is
paused and the tick retries with backoff; nothing buffered is dropped.
"""

from __future__ import annotations

import itertools
import json
import logging
import socket
import time
from collections import deque
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from scrapy import Request, Spider, signals
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import reactor, task, threads

from recordhound import failpoints
from recordhound.backoff import backoff_seconds
from recordhound.config import FrontierConfig, follow_enabled
from recordhound.errors import record_error
from recordhound.frontier import engine_access, registry, serialize
from recordhound.frontier.backend import Counts, Entry, Failure, FrontierBackend, Lease, Recheck
from recordhound.frontier.factory import make_backend
from recordhound.frontier.nodes import claim_node_id, holder_alive, others_alive
from recordhound.frontier.outcomes import Outcomes
from recordhound.robots import robots_limits
from recordhound.frontier.politeness import (
    FULL, SLOT_WAIT_SECONDS, HostLimiter, Limits, make_limiter, politeness_limits)
from recordhound.frontier import recrawl
from recordhound.frontier.registry import FRONTIER_ID, KIND_META, PARENT_ID
from recordhound.frontier.renewer import Renewer
from recordhound.frontier.retry import Problem, RetryPolicy
from recordhound.sources.profile import RecrawlSpec

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

    from recordhound.frontier.dupefilter import FrontierDupeFilter

logger = logging.getLogger(__name__)
COUNTS_TTL_SECONDS = 0.2  # one tick: a node sees the crawl drained at most ~0.4 s after the last ack
RECLAIM_EVERY_SECONDS = 5.0
ORPHAN_TICKS = 3  # ticks the engine must be idle before a handed-out request counts as orphaned
OPEN_TIMEOUT_SECONDS = 30.0  # opening runs on a thread: it may wait for a lock or a slow reset
RESET_WAIT_SECONDS = 0.2  # how often a starting node looks whether another one's reset is done
STAT = "recordhound/frontier/"
SLOT_META = "recordhound_slot"  # request.meta key: the politeness slot the request holds
EXTRA_LEASE_SECONDS = 1.0  # while every request in hand waits for its host, lease more this often


class FrontierScheduler:
    def __init__(self, crawler: Crawler, config: FrontierConfig, dupefilter: FrontierDupeFilter) -> None:
        self.crawler, self.config, self.df = crawler, config, dupefilter
        self.stats = crawler.stats
        self.backend: FrontierBackend | None = None
        self.spider: Spider | None = None
        self.node, self.token = "", ""
        self.outcomes = Outcomes(self._acked, self._failed)
        self._leased: deque[Request] = deque()
        self._entries: list[Entry] = []
        self._entry_fps: set[bytes] = set()
        self._seen = SeenCache(config.seen_cache)  # fingerprints known to be in the seen-set
        self._acks: list[Lease] = []
        self._failures: list[Failure] = []
        self._tokens: dict[int, int] = {}  # frontier id -> the token of our lease on it
        self._seed_pending = False  # the start requests are all buffered: mark the crawl seeded
        self._renewer: Renewer | None = None
        self._broken = False  # a non-transient backend error: the crawl is being closed
        self._is_open = False
        self._counts: tuple[float, Counts] | None = None
        self._tick: task.LoopingCall | None = None
        self._last_renew = self._last_reclaim = 0.0
        self._down_since: float | None = None
        self._retries = 0
        self._retry_at = 0.0
        self._starved = False
        self._orphan_ticks = 0
        self._tries: dict[int, int] = {}  # frontier id -> failed attempts before this lease
        self.retry = RetryPolicy.from_settings(crawler.settings)
        self.limits = Limits()
        self.limiter: HostLimiter | None = None
        self._slots: dict[str, tuple[str, float]] = {}  # slot -> (host, when taken)
        self._slot_ids = itertools.count(1)
        self._blocked: dict[str, float] = {}  # host -> monotonic time to ask again
        self._wake_call: Any = None  # twisted's DelayedCall
        self._wake_when = 0.0
        self._extra_lease_at = 0.0
        self.recrawl = RecrawlSpec()
        self.follow = False  # keep running, leasing pages as they come due (-a follow=true)
        self._kinds: dict[int, str] = {}  # frontier id -> link kind (for its recheck)
        self._states: dict[int, dict[str, Any]] = {}  # frontier id -> recheck state it was leased with
        self._seen_pages: dict[int, recrawl.Seen] = {}  # frontier id -> what its fetch answered
        self._rechecks: list[Recheck] = []
        self._last_progress = time.monotonic()
        self._progress_rechecked = 0
        self._idle_marked = False
        self._rechecked_in_buffer = False  # the buffer holds a page fetched again (a crash point)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        from scrapy.utils.misc import build_from_crawler, load_object

        dupefilter = build_from_crawler(load_object(crawler.settings["DUPEFILTER_CLASS"]), crawler)
        scheduler = cls(crawler, FrontierConfig.from_settings(crawler.settings), dupefilter)
        for handler, signal in ((scheduler._response_received, signals.response_received),
                                (scheduler._item_settled, signals.item_scraped),
                                (scheduler._item_settled, signals.item_dropped),
                                (scheduler._item_error, signals.item_error),
                                (scheduler._left_downloader, signals.request_left_downloader)):
            crawler.signals.connect(handler, signal=signal)
        return scheduler

    # --- lifecycle --------------------------------------------------------------------

    def open(self, spider: Spider) -> Deferred[None]:
        """Connects and registers this node off the reactor thread (lock waits, a reset)."""
        self.spider = spider
        profile = getattr(spider, "profile", None)
        crawl = self.config.crawl_id or (profile.name if profile is not None else spider.name)
        self.retry = getattr(spider, "retry_policy", None) or self.retry
        self.limits = politeness_limits(self.crawler.settings, profile)
        self.recrawl = getattr(profile, "recrawl", None) or RecrawlSpec()
        self.follow = follow_enabled(self.crawler.settings, getattr(spider, "follow", None))
        if self.follow and not self.recrawl.active:
            logger.warning("follow=true, but the profile has no `recrawl:` schedule: the crawl ends when it drains")
            self.follow = False
        self.backend = make_backend(self.config, crawl, timeout=OPEN_TIMEOUT_SECONDS)
        deferred: Deferred[None] = threads.deferToThread(self._open_backend, crawl)
        deferred.addCallback(self._opened, crawl)
        return deferred

    def _open_backend(self, crawl: str) -> None:
        assert self.backend is not None
        self.backend.open()
        self._begin(crawl)
        self.backend.limit_wait(self.config.call_timeout_seconds)  # from here on, calls on the reactor
        self.limits = robots_limits(self.limits, self.spider, self.crawler.settings)  # robots.txt's Crawl-delay
        if self.limits.active:
            self.limiter = make_limiter(self.config, self.crawler.settings)
            self.limiter.forget_node(self.node)  # slots a killed process of this node id left behind

    def _opened(self, _: None, crawl: str) -> None:
        self._is_open = True
        registry.register(self.crawler, self)
        self._renewer = Renewer(lambda: self._second_backend(crawl), self.node, self.token,
                                self.config.lease_seconds)
        self._renewer.start()
        self._tick = task.LoopingCall(self._on_tick)
        self._tick.start(self.config.flush_seconds, now=False)

    def _second_backend(self, crawl: str) -> FrontierBackend:
        backend = make_backend(self.config, crawl, timeout=self.config.lease_seconds / 4)
        backend.open()
        return backend

    def _begin(self, crawl: str) -> None:
        assert self.backend is not None
        self._reset_if_completed(crawl)
        self.node, self.token = claim_node_id(self.backend, self.config.node_id, self.config.lease_seconds)
        reclaimed = self.backend.reclaim_node(self.node) + self._reclaim_dead() + self.backend.reclaim_expired()
        self.backend.set_status("running")
        counts = self.backend.counts()
        logger.info(
            "Frontier %s (%s) for crawl %r, node %s: %d queued, %d leased, %d done, %d failed, "
            "%d seen; %d leases returned to the queue", type(self.backend).__name__,
            self._where(), crawl, self.node, counts.queued, counts.leased_total, counts.done,
            counts.failed, counts.seen, reclaimed)
        self._inc("reclaimed", reclaimed)

    def _reset_if_completed(self, crawl: str) -> None:
        """A completed crawl starts anew: exactly one of the nodes starting on it resets it
        (compare-and-set on its status), the others wait until the reset is done."""
        assert self.backend is not None
        waited = 0.0
        while True:
            status = self.backend.counts().status
            if status == "completed" and self.recrawl.active:
                logger.info("Crawl %r has a recrawl schedule: fetching what is due", crawl)
                return
            if status == "completed" and not others_alive(self.backend, self.config.lease_seconds):
                if self.backend.begin_reset("completed"):
                    logger.info("Crawl %r was completed; starting it anew", crawl)
                    self.backend.reset()
                    return
            elif status != "resetting":
                return
            elif waited >= self.config.lease_seconds and self.backend.begin_reset("resetting"):
                logger.warning("A reset of crawl %r was left unfinished; finishing it", crawl)
                self.backend.reset()
                return
            time.sleep(RESET_WAIT_SECONDS)  # off the reactor: open() runs this in a thread
            waited += RESET_WAIT_SECONDS

    def _reclaim_dead(self) -> int:
        """Leases of registered nodes that are gone (no heartbeat, or a dead pid on this host)."""
        assert self.backend is not None
        host, now = this_host(), self.backend.now()
        dead = [node for node, info in self.backend.nodes().items()
                if node != self.node and not holder_alive(info, host, now, self.config.lease_seconds)]
        if self.limiter is not None:
            for node in dead:
                self.limiter.forget_node(node)  # its politeness slots come back now, not at their expiry
        return sum(self.backend.reclaim_node(node) for node in dead)

    def _where(self) -> str:
        backend = self.backend
        return getattr(backend, "path", None) or f"{getattr(backend, 'prefix', '')}:*"

    def close(self, reason: str) -> None:
        if self._tick is not None and self._tick.running:
            self._tick.stop()
        if self._renewer is not None:
            self._renewer.stop()
        if self._wake_call is not None and self._wake_call.active():
            self._wake_call.cancel()
        if self.limiter is not None:
            self._release_slots()
        if self.backend is None or not self._is_open:
            return  # opening failed: nothing of ours to write back
        try:
            if self._broken:
                return  # leases come back when this node restarts (or they expire)
            self._flush()
            unstarted = [r.meta[FRONTIER_ID] for r in self._leased] + self.outcomes.forget()
            self._leased.clear()
            released = self.backend.release([self._lease(i) for i in unstarted])
            self._inc("released", released)
            counts = self.backend.counts()
            if reason == "finished" and counts.drained:
                self.backend.set_status("completed")
            self.backend.leave(self.node, self.token)
            logger.info("Frontier closed (%s): %d unstarted leases returned; %d queued, %d done, %d failed",
                        reason, released, counts.queued, counts.done, counts.failed)
        finally:
            self.backend.close()

    # --- the Scrapy scheduler interface -----------------------------------------------

    def __len__(self) -> int:
        counts = self._current_counts()
        return len(self._leased) + (counts.queued if counts else 0)

    def has_pending_requests(self) -> bool:
        if self.follow and not self._broken:
            return True  # following: pages come due; SIGINT/SIGTERM ends the node
        if self._leased or len(self.outcomes) or self._down_since is not None:
            return True  # work in this process: no need to ask the backend
        if not self._flush_safely():
            return True
        counts = self._current_counts()
        return counts is None or not counts.drained

    def enqueue_request(self, request: Request) -> bool:
        parent = request.meta.get(FRONTIER_ID)
        child_of = request.meta.pop(PARENT_ID, None)
        queued = self._buffer(request)
        if parent is not None and self.outcomes.is_downloading(parent):
            # a retry or redirect stands for its parent now (even when it is a duplicate);
            # the parent's ack is written after the buffer that holds its replacement
            if _redirect_loop(request):
                chain = " → ".join([*request.meta["redirect_urls"], request.url])
                self.outcomes.failed(parent, f"redirect_loop: {chain}")
            else:
                self.outcomes.replaced(parent)
        if child_of is not None:
            self.outcomes.child_enqueued(child_of)  # buffered: written before its parent's ack
        if len(self._entries) >= self.config.push_batch:
            self._flush_safely()
        return queued

    def _buffer(self, request: Request) -> bool:
        assert self.spider is not None
        fingerprint = None if request.dont_filter else self.df.fingerprint(request)
        if fingerprint is not None and (fingerprint in self._entry_fps or fingerprint in self._seen):
            self._inc("duplicates")
            return False
        try:
            payload = serialize.dumps(request, self.spider)
        except serialize.UnserializableRequest as exc:
            self._inc("unserializable")
            record_error(self.crawler, "unserializable_request", request.url, str(exc))
            return False
        if fingerprint is not None:
            self._entry_fps.add(fingerprint)
        self._entries.append(Entry(fingerprint, request.priority, payload))
        self.stats.inc_value("scheduler/enqueued")
        return True

    def next_request(self) -> Request | None:
        if self._broken:
            return None
        if not self._leased and self._down_since is None:
            if self._entries:
                self._flush_safely()  # the engine is idle for want of what sits in our buffer
            self._lease_more()
        request = self._take_allowed()
        if request is None and self._leased and self._others_may_wait():
            self._lease_more()  # every request in hand waits for its host: look for other hosts' work
            request = self._take_allowed()
        if request is None:
            self._starved = True
            return None
        self._starved = self._idle_marked = False
        self.outcomes.handed_out(request.meta[FRONTIER_ID])
        self.stats.inc_value("scheduler/dequeued")
        return request

    def _idle(self) -> bool:
        """Nothing in hand, in flight or unwritten (a following node between due pages)."""
        return not (self._leased or len(self.outcomes) or self._entries or self._acks or self._failures
                    or self._rechecks) and engine_access.engine_idle(self.crawler)

    def claim_start(self) -> str:
        """"claimed": this node writes the start requests; "seeded": they are in; "wait":
        another live node claimed them and has not finished (or the backend is down)."""
        assert self.backend is not None
        try:
            counts = self.backend.counts()
            if counts.seeded:
                return "seeded"
            if counts.start_claim == self.token:
                return "claimed"
            if counts.start_claim and self._claimant_alive(counts.start_claim):
                return "wait"
            if not self.backend.claim_start(self.token, counts.start_claim):
                return "wait"
        except Exception as exc:  # the backend's client raises its own error types
            self._backend_error(exc)
            return "wait"
        if counts.start_claim:
            logger.warning("The node that claimed the start requests is gone; this node writes them")
        failpoints.hit("frontier.after_start_claim")
        return "claimed"

    def _claimant_alive(self, token: str) -> bool:
        assert self.backend is not None
        host, now = this_host(), self.backend.now()
        return any(info.token == token and holder_alive(info, host, now, self.config.lease_seconds)
                   for info in self.backend.nodes().values())

    def start_finished(self) -> None:
        """Every start request is buffered: the next write marks the crawl seeded with them."""
        self._seed_pending = True
        self._flush_safely()

    # --- politeness ------------------------------------------------------------------

    def _take_allowed(self) -> Request | None:
        """The first request in hand whose host has a token and a free slot now."""
        if self.limiter is None:
            return self._leased.popleft() if self._leased else None
        now = time.monotonic()
        for index, request in enumerate(self._leased):
            host = _host(request)
            if self._blocked.get(host, 0.0) > now:
                continue
            slot = f"{self.node}|{next(self._slot_ids)}"
            try:
                wait = self.limiter.acquire(host, slot, self.limits)
            except Exception as exc:  # the limiter's client raises its own error types
                self._backend_error(exc)
                return None
            if wait == 0.0:
                del self._leased[index]
                request.meta[SLOT_META] = slot
                self._slots[slot] = (host, now)
                return request
            self._blocked[host] = now + (SLOT_WAIT_SECONDS if wait == FULL else wait)
            self._wake_at(self._blocked[host])
        return None

    def _others_may_wait(self) -> bool:
        """Lease more while the hand is blocked: at most every EXTRA_LEASE_SECONDS, up to 4 batches."""
        now = time.monotonic()
        if (self._down_since is not None or now - self._extra_lease_at < EXTRA_LEASE_SECONDS
                or len(self._leased) >= 4 * self.config.lease_batch):
            return False
        self._extra_lease_at = now
        return True

    def _wake_at(self, when: float) -> None:
        """Ask the engine for requests again at ``when`` (a host's token or slot is due)."""
        if self._wake_call is not None and self._wake_call.active():
            if self._wake_when <= when:
                return
            self._wake_call.cancel()
        self._wake_when = when
        clock: Any = reactor
        self._wake_call = clock.callLater(max(0.0, when - time.monotonic()), engine_access.wake, self.crawler)

    def _left_downloader(self, request: Request, spider: Spider) -> None:
        slot = request.meta.get(SLOT_META)
        taken = self._slots.pop(slot, None) if slot else None
        if taken is None or slot is None or self.limiter is None:
            return
        host, since = taken
        try:
            self.limiter.release(host, slot)
        except Exception as exc:  # the slot expires on its own; an outage shows on the next call
            logger.warning("Could not return a politeness slot of %s (%s); it expires on its own", host, exc)
        if self._blocked.pop(host, None) is not None:
            engine_access.wake(self.crawler)

    def _release_slots(self) -> None:
        assert self.limiter is not None
        for slot, (host, _) in list(self._slots.items()):
            try:
                self.limiter.release(host, slot)
            except Exception:  # noqa: BLE001 - shutting down: the slots expire on their own
                break
        self._slots.clear()
        self.limiter.close()

    # --- leasing ----------------------------------------------------------------------

    def _lease_more(self) -> None:
        assert self.backend is not None and self.spider is not None
        try:
            leased = self.backend.lease(self.node, self.config.lease_batch, self.config.lease_seconds)
        except Exception as exc:  # the backend's client raises its own error types
            self._backend_error(exc)
            return
        self._inc("leased", len(leased))
        for entry in leased:
            self._tokens[entry.id] = entry.attempts
            self._tries[entry.id] = entry.tries
            state = recrawl.load_state(entry.state)
            lost = recrawl.lost_leases(entry.attempts, entry.outcomes, state)  # this one included
            if lost > self.config.max_attempts:
                self._failed(entry.id, f"leased {lost - 1} times without an outcome")
                continue
            try:
                request = serialize.loads(entry.payload, self.spider)
            except Exception as exc:  # a payload this code can no longer load
                self._failed(entry.id, f"cannot load stored request: {type(exc).__name__}: {exc}")
                continue
            request.meta[FRONTIER_ID] = entry.id
            self._kinds[entry.id] = str(request.meta.get(KIND_META) or "")
            if state:
                self._states[entry.id] = state
                for name, value in recrawl.conditional_headers(state).items():
                    request.headers[name] = value  # a recheck is a conditional request
            self._leased.append(request)

    # --- outcomes ---------------------------------------------------------------------

    def _lease(self, frontier_id: int) -> Lease:
        return Lease(frontier_id, self._tokens.pop(frontier_id, 0))

    def _acked(self, frontier_id: int) -> None:
        self._tries.pop(frontier_id, None)
        state, seen = self._states.pop(frontier_id, {}), self._seen_pages.pop(frontier_id, None)
        kind = self._kinds.pop(frontier_id, "")
        planned = (recrawl.next_state(self.recrawl, kind, state, seen, self._tokens.get(frontier_id, 0))
                   if self.recrawl.active else None)
        if planned is None:
            self._acks.append(self._lease(frontier_id))
            return
        due_in, kept = planned
        self._rechecks.append(Recheck(self._lease(frontier_id), due_in, kept))
        change = recrawl.changed(state, seen)
        self._inc("rechecked" if state else "first_fetched")
        self._rechecked_in_buffer = self._rechecked_in_buffer or bool(state)
        if change is not None:
            self._inc("changed" if change else "unchanged")

    def _failed(self, frontier_id: int, reason: str, retry_in: float | None = None) -> None:
        for per_lease in (self._kinds, self._states, self._seen_pages):  # a retry's are read again at its lease
            per_lease.pop(frontier_id, None)
        tries = self._tries.pop(frontier_id, 0) + 1
        attempt = json.dumps({"at": round(time.time(), 3), "node": self.node, "outcome": reason})
        if retry_in is None and tries > 1:
            reason = f"{reason} (attempt {tries})"
        self._failures.append(Failure(self._lease(frontier_id), reason, retry_in, attempt))

    def report(self, frontier_id: int, problem: Problem) -> float | None:
        """An errback's problem: a retry after a stored wait, or a dead letter (None)."""
        if frontier_id not in self.outcomes:
            return None
        retry_in = self.retry.retry_in(self._tries.get(frontier_id, 0) + 1, problem)
        self.outcomes.failed(frontier_id, problem.reason, retry_in)
        return retry_in

    def _response_received(self, response: Any, request: Request) -> None:
        frontier_id = request.meta.get(FRONTIER_ID)
        if frontier_id is not None:
            self.outcomes.response_received(frontier_id)
            if self.recrawl.active and frontier_id in self.outcomes:
                self._seen_pages[frontier_id] = recrawl.Seen.of(response)
        slot = request.meta.get(SLOT_META)
        if self.limiter is not None and slot in self._slots:
            host, since = self._slots[slot]
            try:
                self.limiter.feedback(host, self.limits, response.status, time.monotonic() - since)
            except Exception as exc:  # adapting is best effort: the next call shows an outage
                logger.debug("Could not adapt the rate of %s: %s", host, exc)

    def _item_settled(self, item: Any, response: Any, **kwargs: Any) -> None:
        if (frontier_id := _frontier_id(response)) is not None:
            self.outcomes.item_settled(frontier_id)

    def _item_error(self, item: Any, response: Any, failure: Any, **kwargs: Any) -> None:
        if (frontier_id := _frontier_id(response)) is not None:
            self.outcomes.item_settled(frontier_id, f"item pipeline error: {failure.getErrorMessage()}")

    # --- writing and the tick ---------------------------------------------------------

    def _flush(self) -> None:
        if not (self._entries or self._acks or self._failures or self._seed_pending or self._rechecks):
            return
        assert self.backend is not None
        entries, acks, failures, seeded = self._entries, self._acks, self._failures, self._seed_pending
        rechecks = self._rechecks
        failpoints.hit("frontier.before_flush")
        if self._rechecked_in_buffer:
            failpoints.hit("frontier.before_recheck_flush")
        committed = self.backend.commit(entries, acks, failures, seeded, rechecks)
        failpoints.hit("frontier.after_flush")
        self._seen.update(self._entry_fps)
        self._entries, self._entry_fps, self._acks, self._failures, self._rechecks = [], set(), [], [], []
        self._rechecked_in_buffer = False
        self._seed_pending = False
        self._counts = None
        self._inc("queued", committed.queued)
        self._inc("duplicates", len(entries) - committed.queued)
        self._inc("acked", len(acks) + len(rechecks))
        retried = sum(1 for f in failures if f.retry_in is not None)
        if retried:
            failpoints.hit("frontier.after_retry_flush")
        self._inc("retried", retried)
        self._inc("failed", len(failures) - retried)
        if committed.refused:
            self._stale(committed.refused)

    def _stale(self, refused: int) -> None:
        if not self.stats.get_value(STAT + "stale_refused"):
            logger.warning("%d acks or failures of this node were refused: their leases had expired "
                           "and were taken over (the node stalled); the new holders redo that work", refused)
        self._inc("stale_refused", refused)

    def _flush_safely(self) -> bool:
        try:
            self._flush()
        except Exception as exc:  # the backend's client raises its own error types
            self._backend_error(exc)
            return False
        return True

    def _current_counts(self) -> Counts | None:
        now = time.monotonic()
        if self._counts is None or now - self._counts[0] > COUNTS_TTL_SECONDS:
            try:
                assert self.backend is not None
                self._counts = (now, self.backend.counts())
            except Exception as exc:  # the backend's client raises its own error types
                self._backend_error(exc)
                return None
        return self._counts[1]

    def _on_tick(self) -> None:
        now = time.monotonic()
        if self._down_since is not None and now < self._retry_at:
            return
        try:
            self._maintain(now)
        except Exception as exc:  # the backend's client raises its own error types
            self._backend_error(exc)
            return
        if self._down_since is not None:
            logger.warning("Frontier backend is reachable again after %.1f s; resuming",
                           now - self._down_since)
            self._release_lost_leases()
            self._down_since = None
            self._retries = 0
            self.crawler.engine.unpause()
        if self._starved and (counts := self._current_counts()) is not None and (counts.queued or counts.drained):
            engine_access.wake(self.crawler)  # work arrived, or the crawl is over: no need to wait for the heartbeat
        self._fail_orphans()
        if self.follow and self._starved and not self._idle_marked and self._idle():
            self._idle_marked = True  # once per idle spell
            failpoints.hit("frontier.follow_idle")
        if self.follow and now - self._last_progress >= self.config.progress_seconds:
            self._log_progress(now)

    def _log_progress(self, now: float) -> None:
        """A following node says what it re-checked and what comes due."""
        counts = self._current_counts()
        if counts is None:
            return
        stats, elapsed = self.stats.get_stats(), now - self._last_progress
        rechecked = stats.get(STAT + "rechecked", 0) - self._progress_rechecked
        self._progress_rechecked = stats.get(STAT + "rechecked", 0)
        logger.info("Following: %d pages re-checked in the last %.0f s (%d unchanged, %d changed in all); "
                    "%d due now, %d leased, %d due in the next hour, %d scheduled later",
                    rechecked, elapsed, stats.get(STAT + "unchanged", 0), stats.get(STAT + "changed", 0),
                    counts.queued, counts.leased_total, counts.due_within_hour,
                    counts.scheduled - counts.due_within_hour)
        self._last_progress = now

    def _fail_orphans(self) -> None:
        """Handed-out requests the engine finished without a callback or errback (an
        IgnoreRequest with no errback, say) would hold their leases forever: fail them."""
        if not engine_access.engine_idle(self.crawler) or not len(self.outcomes):
            self._orphan_ticks = 0
            return
        self._orphan_ticks += 1
        if self._orphan_ticks >= ORPHAN_TICKS:
            for frontier_id in self.outcomes.ids():
                self.outcomes.failed(frontier_id, "the engine finished with it without a callback or errback")
            self._orphan_ticks = 0

    def _maintain(self, now: float) -> None:
        """Lease renewal and the heartbeat run on the renewer's thread; here: write what is
        buffered, and return the leases of nodes that died or expired."""
        assert self.backend is not None
        self._flush()
        if now - self._last_reclaim >= RECLAIM_EVERY_SECONDS:
            self._inc("reclaimed", self.backend.reclaim_expired() + self._reclaim_dead())
            self._last_reclaim = now

    def _release_lost_leases(self) -> None:
        """A lease whose reply was lost with the connection is held by us but known to nobody."""
        assert self.backend is not None
        known = {r.meta[FRONTIER_ID] for r in self._leased} | set(self.outcomes.ids())
        lost = [lease for lease in self.backend.leases_of(self.node) if lease.id not in known]
        if lost:
            released = self.backend.release(lost)
            logger.warning("Returned %d leases whose reply was lost during the outage", released)
            self._inc("released", released)

    def _backend_error(self, exc: Exception) -> None:
        """An outage pauses and retries; anything else is a bug or bad data: fail loudly."""
        assert self.backend is not None
        if self.backend.is_transient(exc):
            self._went_down(exc)
            return
        if self._broken:
            return
        self._broken = True
        logger.error("Frontier error that retrying cannot fix; closing the crawl", exc_info=exc)
        self.stats.set_value("recordhound/fatal", f"frontier: {type(exc).__name__}: {exc}")
        if self.crawler.engine is not None:
            deferred_from_coro(self.crawler.engine.close_spider_async(reason="frontier_error"))

    def _went_down(self, exc: Exception) -> None:
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
            logger.error("Frontier backend failed (%s: %s); pausing the crawl and retrying",
                         type(exc).__name__, exc)
            if self.crawler.engine is not None:
                self.crawler.engine.pause()
        self._inc("backend_errors")
        self._retries += 1
        backoff = backoff_seconds(self._retries, self.config.retry_max_seconds)
        self._retry_at = now + backoff
        logger.warning("Frontier backend still unreachable (%s); next try in %.1f s", exc, backoff)

    def _inc(self, name: str, count: int = 1) -> None:
        if count and self.stats is not None:
            self.stats.inc_value(STAT + name, count)


def this_host() -> str:
    return socket.gethostname()


def _host(request: Request) -> str:
    return urlparse(request.url).netloc.lower()


def _redirect_loop(request: Request) -> bool:
    """A redirect back to a URL of its own chain (Scrapy's RedirectMiddleware keeps the chain)."""
    return request.url in request.meta.get("redirect_urls", ())


def _frontier_id(response: Any) -> int | None:
    """The frontier id behind an item signal's ``response`` (a Failure for errback items)."""
    return getattr(response, "meta", {}).get(FRONTIER_ID) if hasattr(response, "request") else None


class SeenCache:
    """The most recent fingerprints this process wrote: a duplicate found here is dropped
    without serializing it or asking the backend (seen never becomes unseen)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._fps: dict[bytes, None] = {}

    def __contains__(self, fingerprint: bytes) -> bool:
        return fingerprint in self._fps

    def update(self, fingerprints: set[bytes]) -> None:
        self._fps.update(dict.fromkeys(fingerprints))
        excess = len(self._fps) - self._size
        if excess > 0:
            for old in list(itertools.islice(self._fps, excess)):
                del self._fps[old]
