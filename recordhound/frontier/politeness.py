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

Learned rate (a crawl with no configured rate, adaptive on: the default): a host is not paced until
it answers 429 (``LEARN_STATUS``; a 503 alone teaches nothing: a shop's sporadic 503 on a broken page
must not cap the crawl at whatever rate it had then, e.g. in its first second while the rate still
ramps up). The 429 gives it a learned ceiling, the rate this node was starting its requests at (the
gate counts them per host over ``SENT_WINDOW_SECONDS``, in process), and the rule above from there:
the rate is cut (``CUT_FACTOR``), good responses raise it by ``RAISE_SHARE`` of the ceiling up to the
ceiling, slow ones and 503s cut it. A 429 that cuts also lowers the ceiling to the rate that was
refused, so the rate settles just under the host's limit (with the first ceiling alone, far above the
limit, the raises would undo each cut within a second); a 503 cuts the rate only.

The ceiling can rise again, so one learned too low (a first 429 early in the ramp-up, or with
several nodes from one node's rate while the cluster sent more) does not cap the crawl for good: a
good response grows it by ``CEILING_GROWTH_SHARE`` per second since the last 429 or growth (time,
not responses: at most ``CEILING_GROWTH_STEP_SECONDS`` of it at once) while the host is held at it:
the rate is at the ceiling, a request waited for a token within ``CEILING_DEMAND_SECONDS`` (the
ceiling binds: it never grows past what the crawl asks for, so a later 429 finds it near the rate
really sent), and nothing was cut for ``CEILING_QUIET_SECONDS``. 5 % a second doubles a ceiling in
about 14 s; the 10 s of quiet keep a host at its limit probed once per ~12 s (a few 429s, one cut)
rather than every ~3 s (the rate's own climb back after a cut). Neither the rate nor the ceiling goes
below ``LEARNED_FLOOR_RPS``. ``next_learned`` is the rule; embedded the ceiling lives in this
process, with Redis in the host's hash (``ceiling``, ``grown_at``, ``held_at``), so every node paces
by it once learned.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
SENT_WINDOW_SECONDS = 1.0  # a host's rate of starts (what a learned ceiling starts from) is counted over this
BUSIEST_FADE = 0.8  # SentRate's busiest window counts this much less for each window after it
LEARNED_FLOOR_RPS = 0.5  # a learned ceiling and rate never go below this (requests per second)
LEARN_STATUS = 429  # the answer that gives a host with no configured rate a learned rate (a 503 does not)
CEILING_GROWTH_SHARE = 0.05  # a learned ceiling held for a while grows by this share per second (see above)
CEILING_GROWTH_STEP_SECONDS = 1.0  # one response grows it by at most this many seconds' worth
CEILING_QUIET_SECONDS = 10.0  # it grows only when the host's rate was not cut for this long
CEILING_DEMAND_SECONDS = 1.0  # ... and a request waited for one of its tokens within this long


@dataclass(frozen=True)
class Limits:
    requests_per_second: float = 0.0  # 0: no limit
    concurrency: int = 0  # 0: no limit
    adaptive: bool = True

    @property
    def active(self) -> bool:
        return self.requests_per_second > 0 or self.concurrency > 0

    @property
    def learns(self) -> bool:
        """No configured rate, adaptive: a host that answers 429 gets a learned rate."""
        return self.adaptive and not self.requests_per_second

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
    def feedback(self, host: str, limits: Limits, status: int | None, latency: float, sent_rate: float = 0.0) -> None:
        """Adapt the host's rate to a response (``status`` None: a download error). Without a configured
        rate, a 429 of a host with no learned ceiling yet learns one from ``sent_rate``."""

    def learned(self, hosts: list[str]) -> set[str]:
        """Those of ``hosts`` that have a learned ceiling (another node learned it). Embedded: the ceiling
        lives in this process, and the gate knows its own."""
        return set()

    def forget_holder(self, holder: str) -> None:
        """Free the slots a previous process of ``holder`` left behind (it was killed)."""

    def resync_holder(self, holder: str, held: dict[str, str]) -> None:
        """Make the slots of ``holder`` exactly ``held`` (slot -> host: its requests in flight), after the
        store may have lost writes (an older snapshot, a reconnect: a slot returned since is held there
        again). Embedded: the slots live in this process, nothing to do."""

    def close(self) -> None: ...


def next_rate(rate: float, configured: float, status: int | None, latency: float, usual: float,
              since_cut: float, floor: float | None = None) -> float:
    """The host's rate after one response (the same rule as the Redis script); ``floor`` None: a
    share of the configured rate."""
    floor = configured * FLOOR_SHARE if floor is None else floor
    if status in THROTTLED:
        return max(floor, rate * CUT_FACTOR) if since_cut >= CUT_COOLDOWN_SECONDS else rate
    if _slow(latency, usual):
        return max(floor, rate * SLOW_FACTOR) if since_cut >= CUT_COOLDOWN_SECONDS else rate
    return min(configured, rate + configured * RAISE_SHARE)


def _slow(latency: float, usual: float) -> bool:
    return usual > 0 and latency > max(SLOW_MIN_SECONDS, usual * SLOW_FACTOR_OF_USUAL)


def next_learned(ceiling: float, rate: float, status: int | None, latency: float, usual: float,
                 since_cut: float, since_grown: float = 0.0, since_held: float = float("inf")) -> tuple[float, float]:
    """A host without a configured rate: its (ceiling, rate) after one response (the same rule as the
    Redis script). A first 429 learns with ``ceiling`` and ``rate`` both the rate it was sent at.
    ``since_grown``: seconds since the last 429 or growth of the ceiling; ``since_held``: since a request
    last waited for a token."""
    if status == LEARN_STATUS and since_cut >= CUT_COOLDOWN_SECONDS:
        ceiling = max(LEARNED_FLOOR_RPS, min(ceiling, rate))  # the rate that was refused
    elif (status not in THROTTLED and not _slow(latency, usual) and rate >= ceiling
          and since_cut >= CEILING_QUIET_SECONDS and since_held <= CEILING_DEMAND_SECONDS):
        ceiling *= 1.0 + CEILING_GROWTH_SHARE * min(since_grown, CEILING_GROWTH_STEP_SECONDS)
    rate = min(rate, ceiling)
    return ceiling, next_rate(rate, ceiling, status, latency, usual, since_cut, LEARNED_FLOOR_RPS)


def first_ceiling(sent_rate: float) -> float:
    """The learned ceiling of a host that just answered its first 429."""
    return max(LEARNED_FLOOR_RPS, sent_rate)


class SentRate:
    """The requests this node started for one host over the last ``SENT_WINDOW_SECONDS``: this window's
    count and the last one's (a sliding estimate), a couple of numbers updated per request; and the
    busiest recent window, for ``estimate``."""

    __slots__ = ("window", "count", "last", "busiest", "busiest_at")

    def __init__(self) -> None:
        self.window, self.count, self.last = 0, 0, 0
        self.busiest, self.busiest_at = 0, 0  # the busiest window's count, and which window it was

    def _roll(self, now: float) -> float:
        """Move on to ``now``'s window; returns how far into it ``now`` is (0..1)."""
        position = now / SENT_WINDOW_SECONDS
        window = int(position)
        if window != self.window:
            if self.count >= self._busiest(self.window):
                self.busiest, self.busiest_at = self.count, self.window
            self.last = self.count if window == self.window + 1 else 0
            self.count, self.window = 0, window
        return position - window

    def _busiest(self, window: int) -> float:
        """The busiest window's count, faded by ``BUSIEST_FADE`` for each window since (a start-up's burst
        long ago is not the rate sent now)."""
        return self.busiest * BUSIEST_FADE ** min(window - self.busiest_at, 100)

    def started(self, now: float) -> None:
        self._roll(now)
        self.count += 1

    def rate(self, now: float) -> float:
        """Requests per second over the window that ends ``now``."""
        into = self._roll(now)
        return (self.last * (1.0 - into) + self.count) / SENT_WINDOW_SECONDS

    def estimate(self, now: float) -> float:
        """The rate a first learned ceiling starts from: the last window's, never below the busiest recent
        window (fading by ``BUSIEST_FADE`` a window). A 429 that comes after a lull, or seconds late from a
        slow shop, must not learn the lull's rate: the first version learned the 0.5/s floor then, and held
        the crawl there for minutes."""
        rate = self.rate(now)
        return max(rate, self._busiest(self.window) / SENT_WINDOW_SECONDS)


def holder_of(slot: str) -> str:
    """The holder part of a slot name ``holder|n``."""
    return slot.rsplit("|", 1)[0]


@dataclass
class _Host:
    tokens: float = 1.0
    stamp: float = 0.0
    rate: float = 0.0  # current (adaptive) rate; 0: the configured one
    ceiling: float = 0.0  # learned (no configured rate): the most the rate goes back up to; 0: none learned
    usual: float = 0.0  # moving average of the latency
    cut_at: float = 0.0
    grown_at: float = 0.0  # learned: the last 429 or growth of the ceiling
    held_at: float = 0.0  # the last time a request waited for a token
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
        pace = limits.pace or state.ceiling * PACE_SHARE  # configured, else learned (0: none)
        if pace:
            rate = min(state.rate or pace, pace)
            state.tokens = min(1.0, state.tokens + (now - state.stamp) * rate)
            state.stamp = now
            if state.tokens < 1.0:
                state.held_at = now
                return (1.0 - state.tokens) / rate
            state.tokens -= 1.0
        if limits.concurrency:
            state.slots[slot] = now + self.slot_ttl
        return 0.0

    def release(self, host: str, slot: str) -> None:
        state = self._hosts.get(host)
        if state is not None:
            state.slots.pop(slot, None)

    def feedback(self, host: str, limits: Limits, status: int | None, latency: float, sent_rate: float = 0.0) -> None:
        if not limits.adaptive:
            return
        state, now = self._host(host), time.monotonic()
        old = state.rate or limits.requests_per_second
        if limits.requests_per_second:
            state.rate = next_rate(old, limits.requests_per_second, status, latency, state.usual, now - state.cut_at)
        elif state.ceiling or status == LEARN_STATUS:
            if not state.ceiling:  # the host's first 429: learned from the rate it was sent at
                state.ceiling = old = state.rate = first_ceiling(sent_rate)
            ceiling = state.ceiling
            state.ceiling, state.rate = next_learned(ceiling, old, status, latency, state.usual, now - state.cut_at,
                                                     now - state.grown_at, now - state.held_at)
            if status == LEARN_STATUS or state.ceiling > ceiling:
                state.grown_at = now
        else:
            return
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

    def client() -> Any:  # made at the first call: a cluster client connects as it is made
        return connect(config.redis_url, socket_timeout=config.call_timeout_seconds,
                       socket_connect_timeout=config.call_timeout_seconds, retry=Retry(NoBackoff(), 0))

    return RedisLimiter(client, config.redis_prefix, slot_ttl)
