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
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from scrapy import Request
from twisted.internet import reactor

from recordhound.frontier import engine_access
from recordhound.frontier.politeness import FULL, SLOT_WAIT_SECONDS, HostLimiter, Limits
from recordhound.frontier.registry import FRONTIER_ID

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
SLOT_META = "recordhound_slot"  # request.meta key: the politeness slot the request holds


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
            if self._blocked.get(host, 0.0) > now:
                continue
            slot = f"{self.holder}|{next(self._ids)}"
            wait = self.limiter.acquire(host, slot, self.limits)
            if wait == 0.0:
                del in_hand[index]
                request.meta[SLOT_META] = slot
                self._slots[slot] = (host, now, request.meta[FRONTIER_ID])
                self._by_lease[request.meta[FRONTIER_ID]] = slot
                return request
            self._blocked[host] = now + (SLOT_WAIT_SECONDS if wait == FULL else wait)
            self._wake_at(self._blocked[host])
        return None

    def feedback(self, request: Request, status: int) -> None:
        """Adapt the host's rate to a response (best effort: an outage shows on the next call)."""
        slot = request.meta.get(SLOT_META)
        if self.limiter is None or slot not in self._slots:
            return
        host, since, _ = self._slots[slot]
        try:
            self.limiter.feedback(host, self.limits, status, time.monotonic() - since)
        except Exception as exc:  # noqa: BLE001 - the limiter's client raises its own error types
            logger.debug("Could not adapt the rate of %s: %s", host, exc)

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
        if self._owed.resync:
            self.limiter.resync_holder(self.holder, {slot: host for slot, (host, _, _) in self._slots.items()})
            self._owed = _Owed()
            for host in list(self._blocked):
                self._unblock(host)
        for slot, host in list(self._owed.returns.items()):
            self.limiter.release(host, slot)
            del self._owed.returns[slot]
            self._unblock(host)

    def return_all(self) -> None:
        """At the close, nothing in flight: every slot this node holds in the store, those whose return
        failed included (an outage raises: the close tries again)."""
        self.forget(self.holder)
        self._slots.clear()
        self._by_lease.clear()
        self._owed = _Owed()

    def forget(self, holder: str) -> None:
        """Free the slots a gone process of ``holder`` (a node of this crawl) left behind."""
        if self.limiter is not None:
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
    return urlparse(request.url).netloc.lower()
