"""The host gate: which request in hand may go to the engine now (politeness), and the slots
the requests in flight hold.

A slot is taken when a request is handed to the engine and freed on the first of every path a
request can leave by: its response arrived (from the network, a cassette, Scrapy's HTTP cache or
any middleware that answers itself), it left the downloader, the engine dropped it, or its lease
ended (acked, failed, released, dropped). Freeing twice does nothing. Slots also expire, so one
that no path frees (a killed process) comes back after the download timeout and a margin.

A return that fails (Redis out) is kept and tried again by the next tick once the store answers,
and the close returns every slot of this node (those included) before it leaves, waiting out an
outage as the rest of the close does; a store back from an older snapshot has this node's slots
made the requests in flight again by the next tick. Before, such a slot was held until it expired,
and a host of a few slots stopped for that long (35 s by default) after a blip of a second, on
every node.

Learned rates (no configured rate, adaptive on: ``Limits.learns``): a host is taken without asking the
limiter (no store call, no slot: the request only carries its start time, ``STARTED_META``, so
there is nothing to free; it is never stored with a request that goes back to the frontier) until it
answers 429 (a 503 alone teaches nothing); the gate counts each host's starts in process
(``SentRate``), and that first 429 gives the host a learned rate in the limiter from them (logged
once and counted in ``LEARNED_STAT``). From then on the host's requests go through the limiter's
bucket and every response of it is fed back (the ceiling may grow again: ``politeness.py``).
With Redis a node also picks up the hosts another node learned, at most once a
``LEARNED_CHECK_SECONDS`` (one pipelined call on the tick), so every node paces by the shared rate.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import reactor

from recordhound.frontier import engine_access
from recordhound.frontier.politeness import FULL, LEARN_STATUS, SLOT_WAIT_SECONDS, HostLimiter, Limits, SentRate
from recordhound.frontier.registry import FRONTIER_ID

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
SLOT_META = "recordhound_slot"  # request.meta key: the politeness slot the request holds
STARTED_META = "recordhound_started"  # request.meta key: when a request that holds no slot was taken (monotonic)
LEARNED_CHECK_SECONDS = 1.0  # how often a node asks the store which of its hosts another node learned a rate of
LEARNED_STAT = "recordhound/politeness/learned"  # hosts that learned a rate from a 429 of this node


class HostGate:
    def __init__(self, crawler: Crawler, limiter: HostLimiter | None, limits: Limits, holder: str) -> None:
        self.crawler, self.limiter, self.limits, self.holder = crawler, limiter, limits, holder
        self._slots: dict[str, tuple[str, float, int]] = {}  # slot -> (host, when taken, frontier id)
        self._by_lease: dict[int, str] = {}  # frontier id -> its slot
        self._owed = _Owed()  # what the store's slots still need once it answers
        self._ids = itertools.count(1)
        self._blocked: dict[str, float] = {}  # host -> monotonic time to ask again
        self._wake: Any = None  # twisted's DelayedCall
        self._wake_when = 0.0
        self._sent: dict[str, SentRate] = {}  # host -> its recent starts (no configured rate)
        self._learned: set[str] = set()  # hosts with a learned rate: paced through the limiter
        self._learned_checked = 0.0

    def take(self, in_hand: deque[Request], held_back: AbstractSet[int] = frozenset()) -> Request | None:
        """The first request in hand whose host has a token and a free slot now, taken out of the
        hand (the limiter's errors reach the caller: an outage); none of ``held_back`` (frontier ids)."""
        if self.limiter is None:
            if not held_back:
                return in_hand.popleft() if in_hand else None
            index = next((i for i, r in enumerate(in_hand) if r.meta[FRONTIER_ID] not in held_back), None)
            if index is None:
                return None
            request = in_hand[index]
            del in_hand[index]
            return request
        now = time.monotonic()
        for index, request in enumerate(in_hand):
            if held_back and request.meta[FRONTIER_ID] in held_back:
                continue
            host = _host(request)
            if self.limits.active or host in self._learned:  # paced: a configured limit, or a learned rate
                if self._blocked.get(host, 0.0) > now:
                    continue
                slot = f"{self.holder}|{next(self._ids)}"
                wait = self.limiter.acquire(host, slot, self.limits)
                if wait != 0.0:
                    self._blocked[host] = now + (SLOT_WAIT_SECONDS if wait == FULL else wait)
                    self._wake_at(self._blocked[host])
                    continue
            del in_hand[index]
            if self.limits.learns:
                self._sent.setdefault(host, SentRate()).started(now)
            if self.limits.active:
                request.meta[SLOT_META] = slot
                self._slots[slot] = (host, now, request.meta[FRONTIER_ID])
                self._by_lease[request.meta[FRONTIER_ID]] = slot
            else:  # a learned rate only: no slot to hold, its start time for the feedback
                request.meta[STARTED_META] = now
            return request
        return None

    def feedback(self, request: Request, status: int) -> None:
        """Adapt the host's rate to a response (best effort: an outage shows on the next call)."""
        slot = request.meta.get(SLOT_META)
        if self.limiter is None:
            return
        now = time.monotonic()
        if slot in self._slots:
            host, since, _ = self._slots[slot]
        elif STARTED_META in request.meta and not self.limits.active:
            since = request.meta.pop(STARTED_META)
            if not self._learned and status != LEARN_STATUS:
                return  # the hot path
            host = _host(request)
        else:
            return
        if self.limits.learns and host not in self._learned and status != LEARN_STATUS:
            return  # the hot path: a host that never said 429 costs no store call (a 503 alone learns nothing)
        # what this node sent the host, read on a 429 only: the limiter learns a ceiling from it when it has none
        sent = self._sent[host].estimate(now) if status == LEARN_STATUS and host in self._sent else 0.0
        if self.limits.learns and host not in self._learned:
            self._learn(host, sent)
        try:
            self.limiter.feedback(host, self.limits, status, now - since, sent)
        except Exception as exc:  # noqa: BLE001 - the limiter's client raises its own error types
            logger.debug("Could not adapt the rate of %s: %s", host, exc)

    def _learn(self, host: str, sent: float) -> None:
        self._learned.add(host)
        logger.info("%s answered 429: its requests are paced from now on, at a rate learned from the %.1f a "
                    "second this node sent", host, sent)
        if self.crawler is not None:
            self.crawler.stats.inc_value(LEARNED_STAT)

    def free(self, request: Request) -> None:
        self._free(request.meta.get(SLOT_META))

    def free_lease(self, frontier_id: int) -> None:
        self._free(self._by_lease.get(frontier_id))

    def _free(self, slot: str | None) -> None:
        taken = self._slots.pop(slot, None) if slot else None
        if taken is None or slot is None or self.limiter is None:
            return
        host, _, frontier_id = taken
        if self._by_lease.get(frontier_id) == slot:
            del self._by_lease[frontier_id]
        try:
            self.limiter.release(host, slot)
        except Exception as exc:  # noqa: BLE001 - the limiter's client raises its own error types
            self._owed.returns[slot] = host
            logger.warning("Could not return a politeness slot of %s (%s); it is returned once the store "
                           "answers", host, exc)
            return
        self._unblock(host)

    def _unblock(self, host: str) -> None:
        if self._blocked.pop(host, None) is not None:
            engine_access.wake(self.crawler)

    def recheck(self) -> None:
        """The store may have lost writes (it came back from an older snapshot, or after a reconnect):
        a slot returned since would be held there again (until it expired, its host waited for
        nothing); the next ``settle`` makes this node's slots there its requests in flight."""
        self._owed.resync = True

    def settle(self) -> None:
        """The tick, once the store answers: the slots whose return failed are returned, and after a
        store regression or a reconnect its slots of this node are made the requests in flight. An
        outage raises; the next tick tries again."""
        if self.limiter is None:
            return
        self._check_learned()
        if not self.limits.active:
            self._owed.resync = False  # learned rates only: this node holds no slot in the store
            return
        if self._owed.resync:
            self.limiter.resync_holder(self.holder, {slot: host for slot, (host, _, _) in self._slots.items()})
            self._owed = _Owed()
            for host in list(self._blocked):
                self._unblock(host)
        for slot, host in list(self._owed.returns.items()):
            self.limiter.release(host, slot)
            del self._owed.returns[slot]
            self._unblock(host)

    def _check_learned(self) -> None:
        """The hosts this node sent requests to lately that another node learned a rate of (best effort)."""
        now = time.monotonic()
        if not self.limits.learns or now - self._learned_checked < LEARNED_CHECK_SECONDS:
            return
        self._learned_checked = now
        for host in [host for host, sent in self._sent.items() if sent.rate(now) == 0.0]:
            del self._sent[host]  # nothing started for a while: forgotten (counted again from its next start)
        hosts = [host for host in self._sent if host not in self._learned]
        if not hosts:
            return
        try:
            self._learned |= self.limiter.learned(hosts) if self.limiter is not None else set()
        except Exception as exc:  # noqa: BLE001 - the limiter's client raises its own error types
            logger.debug("Could not read which hosts have a learned rate: %s", exc)

    def return_all(self) -> None:
        """At the close, nothing in flight: every slot this node holds in the store, those whose return
        failed included (an outage raises: the close tries again)."""
        self.forget(self.holder)
        self._slots.clear()
        self._by_lease.clear()
        self._owed = _Owed()

    def forget(self, holder: str) -> None:
        """Free the slots a gone process of ``holder`` (a node of this crawl) left behind (none without limits:
        learned rates take no slot)."""
        if self.limiter is not None and self.limits.active:
            self.limiter.forget_holder(holder)

    def _wake_at(self, when: float) -> None:
        """Ask the engine for requests again at ``when`` (a host's token or slot is due)."""
        if self._wake is not None and self._wake.active():
            if self._wake_when <= when:
                return
            self._wake.cancel()
        self._wake_when = when
        clock: Any = reactor
        self._wake = clock.callLater(max(0.0, when - time.monotonic()), engine_access.wake, self.crawler)

    def stop_waking(self) -> None:
        """The close began: no more wake-ups of the engine for a host's slot or token."""
        if self._wake is not None and self._wake.active():
            self._wake.cancel()

    def close(self) -> None:
        self.stop_waking()
        if self.limiter is not None:
            self.limiter.close()


@dataclass
class _Owed:
    returns: dict[str, str] = field(default_factory=dict)  # slot -> host: freed here, its return failed
    resync: bool = False  # the store lost writes: its slots of this node are to be made the ones in flight


def _host(request: Request) -> str:
    return urlparse_cached(request).netloc.lower()  # cached per request: Scrapy's downloader parses it too
