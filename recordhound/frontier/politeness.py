"""Per-host politeness shared by every node: a token bucket (requests per second) and
concurrency slots (requests in flight), with an adaptive rate.

The scheduler asks ``acquire`` before it hands a request to the engine and ``release`` when the
request is done with the network (``frontier/hostgate.py``). With Redis (``RedisLimiter``) the
bucket and the slots live in Redis and are updated by Lua scripts, so all nodes together keep the
limits. A slot is named ``holder|n`` (the holder: one node of one crawl) and carries an expiry (the
download timeout and a margin), in Redis and embedded alike, so a slot nobody returns comes back.
Embedded, ``LocalLimiter`` keeps the same limits in this process.

Adaptive (AutoThrottle's idea, for the whole cluster): a 429 or 503, or a response much slower
than the host's usual, lowers the host's rate (at most once per ``CUT_COOLDOWN_SECONDS``); each
good response raises it by a little, back up to the configured rate.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from recordhound.config import FrontierConfig, non_negative_float, non_negative_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from recordhound.sources.profile import Profile

FULL = -1.0  # acquire: every concurrency slot is taken (wait for a release)
SLOT_WAIT_SECONDS = 0.05  # how long a node waits before asking again for a full host's slot
CUT_FACTOR, SLOW_FACTOR = 0.5, 0.8  # the rate after a 429/503, after a slow response
RAISE_SHARE = 0.02  # each good response raises the rate by this share of the configured rate
FLOOR_SHARE = 0.05  # the rate never goes below this share of the configured rate
CUT_COOLDOWN_SECONDS = 1.0
SLOW_FACTOR_OF_USUAL, SLOW_MIN_SECONDS = 3.0, 1.0  # "slow": this many times the usual latency, and at least this
THROTTLED = (429, 503)
# Tokens come at this share of the configured rate: the host counts arrivals, which jitter by a few
# milliseconds, so pacing at exactly R could put R+1 requests into one of its seconds.
PACE_SHARE = 0.95
SLOT_MARGIN_SECONDS = 5.0  # a slot outlives the download timeout by this much (then it is free again)


@dataclass(frozen=True)
class Limits:
    requests_per_second: float = 0.0  # 0: no limit
    concurrency: int = 0  # 0: no limit
    adaptive: bool = True

    @property
    def active(self) -> bool:
        return self.requests_per_second > 0 or self.concurrency > 0

    @property
    def pace(self) -> float:
        """Tokens per second (a little under the limit; see PACE_SHARE)."""
        return self.requests_per_second * PACE_SHARE


class HostLimiter(ABC):
    @abstractmethod
    def acquire(self, host: str, slot: str, limits: Limits) -> float:
        """Take a token and a slot named ``slot`` for ``host``: 0.0 when taken, else the seconds
        to wait before asking again (``FULL``: every slot is taken)."""

    @abstractmethod
    def release(self, host: str, slot: str) -> None:
        """Return a slot (a slot already returned or expired: nothing happens)."""

    @abstractmethod
    def feedback(self, host: str, limits: Limits, status: int | None, latency: float) -> None:
        """Adapt the host's rate to a response (``status`` None: a download error)."""

    def forget_holder(self, holder: str) -> None:
        """Free the slots a previous process of ``holder`` left behind (it was killed)."""

    def resync_holder(self, holder: str, held: dict[str, str]) -> None:
        """Make the slots of ``holder`` exactly ``held`` (slot -> host: its requests in flight), after the
        store may have lost writes (an older snapshot, a reconnect: a slot returned since is held there
        again). Embedded: the slots live in this process, nothing to do."""

    def close(self) -> None: ...


def next_rate(rate: float, configured: float, status: int | None, latency: float, usual: float,
              since_cut: float) -> float:
    """The host's rate after one response (the same rule as the Redis script)."""
    floor = configured * FLOOR_SHARE
    if status in THROTTLED:
        return max(floor, rate * CUT_FACTOR) if since_cut >= CUT_COOLDOWN_SECONDS else rate
    if usual > 0 and latency > max(SLOW_MIN_SECONDS, usual * SLOW_FACTOR_OF_USUAL):
        return max(floor, rate * SLOW_FACTOR) if since_cut >= CUT_COOLDOWN_SECONDS else rate
    return min(configured, rate + configured * RAISE_SHARE)


def holder_of(slot: str) -> str:
    """The holder part of a slot name ``holder|n``."""
    return slot.rsplit("|", 1)[0]


@dataclass
class _Host:
    tokens: float = 1.0
    stamp: float = 0.0
    rate: float = 0.0  # current (adaptive) rate; 0: the configured one
    usual: float = 0.0  # moving average of the latency
    cut_at: float = 0.0
    slots: dict[str, float] = field(default_factory=dict)  # slot -> expiry (monotonic)


class LocalLimiter(HostLimiter):
    """The limits within this process (the embedded frontier); slots expire as Redis ones do."""

    def __init__(self, slot_ttl: float) -> None:
        self._hosts: dict[str, _Host] = {}
        self.slot_ttl = slot_ttl

    def _host(self, host: str) -> _Host:
        return self._hosts.setdefault(host, _Host(stamp=time.monotonic()))

    def acquire(self, host: str, slot: str, limits: Limits) -> float:
        state, now = self._host(host), time.monotonic()
        for expired in [s for s, until in state.slots.items() if until <= now]:
            del state.slots[expired]
        if limits.concurrency and len(state.slots) >= limits.concurrency:
            return FULL
        if limits.requests_per_second:
            rate = min(state.rate or limits.pace, limits.pace)
            state.tokens = min(1.0, state.tokens + (now - state.stamp) * rate)
            state.stamp = now
            if state.tokens < 1.0:
                return (1.0 - state.tokens) / rate
            state.tokens -= 1.0
        if limits.concurrency:
            state.slots[slot] = now + self.slot_ttl
        return 0.0

    def release(self, host: str, slot: str) -> None:
        state = self._hosts.get(host)
        if state is not None:
            state.slots.pop(slot, None)

    def feedback(self, host: str, limits: Limits, status: int | None, latency: float) -> None:
        if not (limits.adaptive and limits.requests_per_second):
            return
        state, now = self._host(host), time.monotonic()
        old = state.rate or limits.requests_per_second
        state.rate = next_rate(old, limits.requests_per_second, status, latency, state.usual, now - state.cut_at)
        if state.rate < old:
            state.cut_at = now
        if status not in THROTTLED:
            state.usual = latency if not state.usual else 0.9 * state.usual + 0.1 * latency


def politeness_limits(settings: BaseSettings, profile: Profile | None) -> Limits:
    """The profile's ``politeness:``, else the RECORDHOUND_POLITENESS_* settings."""
    rate = non_negative_float(settings, "RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND")
    concurrency = non_negative_int(settings, "RECORDHOUND_POLITENESS_CONCURRENCY")  # both checked at start-up
    spec = profile.politeness if profile is not None else None
    if spec is not None:
        rate = spec.requests_per_second if spec.requests_per_second is not None else rate
        concurrency = spec.concurrency if spec.concurrency is not None else concurrency
    return Limits(rate, concurrency, settings.getbool("RECORDHOUND_POLITENESS_ADAPTIVE"))


def make_limiter(config: FrontierConfig, settings: BaseSettings) -> HostLimiter:
    """Redis-shared limits when the frontier is in Redis, else this process's own."""
    slot_ttl = settings.getfloat("DOWNLOAD_TIMEOUT") + SLOT_MARGIN_SECONDS
    if not config.redis_url:
        return LocalLimiter(slot_ttl)
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from recordhound.frontier.politeness_redis import RedisLimiter
    from recordhound.redis_client import connect

    client = connect(config.redis_url, socket_timeout=config.call_timeout_seconds,
                     socket_connect_timeout=config.call_timeout_seconds, retry=Retry(NoBackoff(), 0))
    return RedisLimiter(client, config.redis_prefix, slot_ttl)
