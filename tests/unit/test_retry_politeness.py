"""The retry policy's waits and the politeness arithmetic, with fixed numbers as the truth."""

from __future__ import annotations

import math
import time
from collections import deque
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import pytest
from scrapy import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from recordhound.exceptions import ConfigError
from recordhound.frontier import politeness
from recordhound.frontier.hostgate import LEARNED_STAT, SLOT_META, STARTED_META, HostGate
from recordhound.frontier.politeness import (
    CEILING_GROWTH_SHARE, CEILING_QUIET_SECONDS, FULL, LEARNED_FLOOR_RPS, Limits, LocalLimiter, SentRate, first_ceiling,
    next_learned, next_rate,
)
from recordhound.frontier.registry import FRONTIER_ID
from recordhound.frontier.retry import Problem, RetryPolicy, retry_after_seconds
from recordhound.sources.profile import RetrySpec


def policy(**overrides: object) -> RetryPolicy:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    for name, value in overrides.items():
        settings.set(name, value)
    return RetryPolicy.from_settings(settings)


TRANSIENT = Problem("http_503", "HTTP error response", transient=True)


def test_backoff_doubles_with_jitter_up_to_the_cap_and_stops_after_the_last_attempt() -> None:
    retry = policy(RECORDHOUND_RETRY_BASE_SECONDS=1, RECORDHOUND_RETRY_CAP_SECONDS=5, RECORDHOUND_RETRY_MAX_ATTEMPTS=5)
    for tries, (low, high) in {1: (0.5, 1), 2: (1, 2), 3: (2, 4), 4: (2.5, 5)}.items():
        waits = [retry.retry_in(tries, TRANSIENT) for _ in range(200)]
        assert all(w is not None and low <= w <= high for w in waits), (tries, min(waits), max(waits))  # type: ignore[type-var]
        assert len(set(waits)) > 100  # jittered: nodes that failed together do not come back together
    assert retry.retry_in(5, TRANSIENT) is None  # the fifth attempt was the last
    assert retry.retry_in(1, Problem("http_404", "HTTP error response")) is None  # permanent


def test_retry_after_is_a_floor_in_seconds_or_as_a_date() -> None:
    retry = policy()
    assert retry.retry_in(1, Problem("http_429", "", True, retry_after=30)) == 30
    assert retry_after_seconds("120") == 120
    soon = datetime.now(timezone.utc) + timedelta(seconds=90)
    assert 85 <= (retry_after_seconds(format_datetime(soon, usegmt=True)) or 0) <= 90
    assert retry_after_seconds("tomorrow-ish") is None


def test_a_profile_overrides_and_adds_codes_and_bad_settings_are_named() -> None:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    retry = RetryPolicy.from_settings(settings, RetrySpec(base_seconds=3, max_attempts=2, http_codes=(520,)))
    assert (retry.base_seconds, retry.cap_seconds, retry.max_attempts) == (3, 60, 2)
    assert {429, 503, 520} <= retry.http_codes
    with pytest.raises(ConfigError, match="RECORDHOUND_RETRY_MAX_ATTEMPTS"):
        policy(RECORDHOUND_RETRY_MAX_ATTEMPTS=0)
    with pytest.raises(ConfigError, match="RECORDHOUND_RETRY_HTTP_CODES"):
        policy(RECORDHOUND_RETRY_HTTP_CODES=["5xx"])


def test_local_limiter_spaces_requests_and_counts_slots() -> None:
    limiter, limits = LocalLimiter(slot_ttl=60), Limits(requests_per_second=10, concurrency=2)
    assert limiter.acquire("shop", "a", limits) == 0.0
    wait = limiter.acquire("shop", "b", limits)
    assert 0.05 < wait <= 1 / 9.5  # the next token in 1/10 s, paced at 95 %
    time.sleep(wait)
    assert limiter.acquire("shop", "b", limits) == 0.0
    time.sleep(0.12)
    assert limiter.acquire("shop", "c", limits) == FULL  # two in flight
    assert limiter.acquire("other", "x", limits) == 0.0  # per host
    limiter.release("shop", "a")
    assert limiter.acquire("shop", "c", limits) == 0.0


def test_local_slots_expire_like_redis_ones() -> None:
    """A slot nobody returns (a path that never frees it) is free again after its time."""
    limiter, limits = LocalLimiter(slot_ttl=0.2), Limits(concurrency=1)
    assert limiter.acquire("shop", "a", limits) == 0.0
    assert limiter.acquire("shop", "b", limits) == FULL
    time.sleep(0.25)
    assert limiter.acquire("shop", "b", limits) == 0.0


def test_the_rate_halves_on_429_once_a_second_and_recovers_slowly() -> None:
    assert next_rate(20, 20, 429, 0.1, 0.1, since_cut=5) == 10
    assert next_rate(10, 20, 503, 0.1, 0.1, since_cut=0.5) == 10  # cooldown: one cut per second
    assert next_rate(1.0, 20, 429, 0.1, 0.1, since_cut=5) == 1.0  # floor: 5 % of 20
    assert next_rate(10, 20, 200, 0.1, 0.1, since_cut=5) == pytest.approx(10.4)
    assert next_rate(19.9, 20, 200, 0.1, 0.1, since_cut=5) == 20
    assert next_rate(20, 20, 200, 2.5, 0.5, since_cut=5) == 16  # slow: over 3x the usual and over 1 s


def test_a_learned_rate_starts_from_the_rate_sent_and_a_429_lowers_its_ceiling_to_the_refused_rate() -> None:
    assert first_ceiling(40) == 40 and first_ceiling(0.1) == LEARNED_FLOOR_RPS
    assert next_learned(40, 40, 429, 0.1, 0.0, since_cut=5) == (40, 20)  # the first 429: cut from the rate sent
    assert next_learned(40, 20, 200, 0.1, 0.1, since_cut=5) == (40, pytest.approx(20.8))  # + 2 % of the ceiling
    assert next_learned(40, 39.5, 200, 0.1, 0.1, since_cut=5) == (40, 40)  # up to the ceiling, no further
    assert next_learned(40, 24, 429, 0.1, 0.1, since_cut=5) == (24, 12)  # the rate refused is the new ceiling
    assert next_learned(40, 24, 429, 0.1, 0.1, since_cut=0.5) == (40, 24)  # cooldown: neither moves
    assert next_learned(40, 24, 503, 0.1, 0.1, since_cut=5) == (40, 12)  # a 503 cuts; the ceiling stays
    assert next_learned(40, 20, 200, 2.5, 0.5, since_cut=5) == (40, 16)  # slow: as with a configured rate
    assert next_learned(0.8, 0.8, 429, 0.1, 0.1, since_cut=5) == (0.8, LEARNED_FLOOR_RPS)  # the floor


def test_sent_rate_counts_the_starts_of_the_last_window() -> None:
    sent = SentRate()
    for i in range(30):
        sent.started(100.0 + i / 30)  # 30 in the second from 100 s
    assert sent.rate(100.99) == pytest.approx(30)
    assert sent.rate(101.5) == pytest.approx(15)  # half of the last window still counts
    assert sent.rate(103.0) == 0.0  # nothing lately


def test_a_first_ceiling_is_never_estimated_below_the_busiest_window() -> None:
    """A 429 that comes after a lull (a slow shop's late answer): the estimate is the rate really sent
    before, not the lull's nothing (before: the 0.5/s floor, which held the crawl there for minutes)."""
    lull = SentRate()
    for i in range(30):
        lull.started(100.0 + i / 30)
    lull.started(102.2)  # then one start in two seconds
    assert lull.rate(104.5) == 0.0 and lull.estimate(104.5) == pytest.approx(30 * 0.8 ** 4)  # 4 windows after the burst
    assert lull.estimate(130.5) < 0.2  # it fades: a burst long ago (a crawl's start) is not the rate sent now
    silent = SentRate()
    for i in range(30):
        silent.started(100.0 + i / 30)
    assert silent.estimate(130.5) < 0.2  # by the windows since the burst, with or without starts between


def test_without_a_configured_rate_the_local_limiter_paces_a_host_only_once_it_said_429() -> None:
    limiter, learning = LocalLimiter(slot_ttl=60), Limits()
    assert learning.learns and not learning.active
    assert [limiter.acquire("shop", f"s{i}", learning) for i in range(5)] == [0.0] * 5  # nothing learned: no pace
    limiter.feedback("shop", learning, 200, 0.1, sent_rate=40)
    limiter.feedback("shop", learning, 404, 0.1, sent_rate=40)
    assert limiter.acquire("shop", "s5", learning) == 0.0 and limiter.acquire("shop", "s6", learning) == 0.0
    limiter.feedback("shop", learning, 429, 0.1, sent_rate=40)  # learned: ceiling 40, rate 20
    limiter.acquire("shop", "s7", learning)
    assert 0 < limiter.acquire("shop", "s8", learning) <= 1 / 20  # paced at 20 a second
    assert limiter.acquire("other", "x", learning) == 0.0  # per host
    configured = Limits(requests_per_second=10)
    limiter.feedback("third", configured, 429, 0.1, sent_rate=400)  # a configured rate: as before, no ceiling
    assert next_rate(10, 10, 429, 0.1, 0.0, since_cut=10) == 5
    assert not Limits(adaptive=False).learns and not configured.learns


def _request(url: str, frontier_id: int) -> Request:
    return Request(url, meta={FRONTIER_ID: frontier_id})


def test_the_gate_takes_unlearned_hosts_without_the_limiter_and_paces_a_host_that_said_429() -> None:
    gate = HostGate(None, LocalLimiter(slot_ttl=60), Limits(), "demo:n1")  # type: ignore[arg-type]
    try:
        hand = deque(_request(f"http://shop.test/{i}", i) for i in range(6))
        hand.append(_request("http://other.test/x", 99))
        taken = [gate.take(hand) for _ in range(3)]
        assert all(r is not None and SLOT_META not in r.meta for r in taken)  # no slot, no limiter call
        first = taken[0]
        assert first is not None
        gate.feedback(first, 429)  # learned from the ~3 requests a second it was sent
        gate.free(first)  # holds no slot: nothing to free, nothing breaks
        other = hand[-1]
        assert gate.take(hand) is not None  # the bucket's one token
        assert gate.take(hand) is other  # shop.test waits for its next token; other.test goes
        assert gate.take(hand) is None and len(hand) == 2
    finally:
        gate.stop_waking()


class _Clock:
    """Stands for ``time`` in ``politeness``: the local limiter's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(politeness, "time", fake)
    return fake


def test_a_503_before_any_429_learns_nothing(clock: _Clock) -> None:
    limiter, learning = LocalLimiter(slot_ttl=60), Limits()
    limiter.feedback("shop", learning, 503, 0.1, sent_rate=2)  # its first second: 2 sent, a broken page
    assert limiter._hosts["shop"].ceiling == 0
    assert [limiter.acquire("shop", f"s{i}", learning) for i in range(50)] == [0.0] * 50  # not paced
    clock.now += 1
    limiter.feedback("shop", learning, 429, 0.1, sent_rate=40)
    assert (limiter._hosts["shop"].ceiling, limiter._hosts["shop"].rate) == (40, 20)
    clock.now += 1.5
    limiter.feedback("shop", learning, 503, 0.1, sent_rate=40)  # once learned, a 503 cuts the rate, not the ceiling
    assert (limiter._hosts["shop"].ceiling, limiter._hosts["shop"].rate) == (40, 10)


def test_the_learned_ceiling_grows_by_5_percent_a_second_only_when_quiet_and_held_at_it() -> None:
    quiet, grown = CEILING_QUIET_SECONDS, 20 * (1 + CEILING_GROWTH_SHARE)
    assert next_learned(20, 20, 200, 0.1, 0.1, since_cut=quiet, since_grown=1, since_held=0.5) == (
        pytest.approx(grown), pytest.approx(20 + 0.02 * grown))
    assert next_learned(20, 20, 200, 0.1, 0.1, since_cut=quiet, since_grown=600, since_held=0.5)[0] == \
        pytest.approx(grown)  # a long quiet counts as one second at most
    assert next_learned(20, 20, 200, 0.1, 0.1, since_cut=quiet, since_grown=0.2, since_held=0.5)[0] == \
        pytest.approx(20 * (1 + 0.2 * CEILING_GROWTH_SHARE))  # time, not responses
    assert next_learned(20, 20, 200, 0.1, 0.1, since_cut=quiet - 1, since_grown=1, since_held=0.5)[0] == 20  # a cut
    assert next_learned(20, 20, 200, 0.1, 0.1, since_cut=quiet, since_grown=1, since_held=2)[0] == 20  # nobody waits
    assert next_learned(20, 15, 200, 0.1, 0.1, since_cut=quiet, since_grown=1, since_held=0.5)[0] == 20  # below it
    assert next_learned(20, 20, 200, 2.5, 0.5, since_cut=quiet, since_grown=1, since_held=0.5)[0] == 20  # slow
    assert next_learned(20, 20, 503, 0.1, 0.1, since_cut=quiet, since_grown=1, since_held=0.5) == (20, 10)
    assert next_learned(20, 20, 429, 0.1, 0.1, since_cut=quiet, since_grown=1, since_held=0.5) == (20, 10)


def _held(limiter: LocalLimiter, limits: Limits) -> None:
    """A request waits for one of the host's tokens (the learned ceiling binds)."""
    while limiter.acquire("shop", "s", limits) == 0.0:
        pass


def test_the_local_limiter_grows_the_ceiling_with_time_not_during_429s_and_bounded_per_second(clock: _Clock) -> None:
    limiter, learning = LocalLimiter(slot_ttl=60), Limits()
    limiter.feedback("shop", learning, 429, 0.1, sent_rate=20)  # learned: 20, rate 10
    state = limiter._hosts["shop"]
    for _ in range(int(CEILING_QUIET_SECONDS)):  # a 429 a second at the ceiling: it never grows
        clock.now += 1.0
        state.rate = state.ceiling
        _held(limiter, learning)
        limiter.feedback("shop", learning, 429, 0.1)
        for _ in range(40):
            limiter.feedback("shop", learning, 200, 0.1)
        assert state.ceiling == 20
    clock.now += CEILING_QUIET_SECONDS
    _held(limiter, learning)
    for _ in range(40):  # back at the ceiling; 40 answers in 0.04 s grow it for 1 s (the quiet), then by 0.2 %
        clock.now += 0.001
        limiter.feedback("shop", learning, 200, 0.1)
    assert 21 < state.ceiling <= 21 * (1 + 0.04 * CEILING_GROWTH_SHARE)
    start = state.ceiling
    for _ in range(1000):  # 10 s at the ceiling, held, 100 answers a second: 5 % a second, compounded
        clock.now += 0.01
        _held(limiter, learning)
        limiter.feedback("shop", learning, 200, 0.1)
    assert start * 1.05 ** 9 < state.ceiling <= start * math.exp(10 * CEILING_GROWTH_SHARE)
    clock.now += 5.0  # the crawl asks for less than the ceiling (nobody waits for a token): it stays
    ceiling = state.ceiling
    limiter.feedback("shop", learning, 200, 0.1)
    assert state.ceiling == ceiling


def test_a_503_first_teaches_the_gate_nothing_and_a_429_is_counted_as_learned() -> None:
    crawler = get_crawler()
    gate = HostGate(crawler, LocalLimiter(slot_ttl=60), Limits(), "demo:n1")
    try:
        hand = deque(_request(f"http://shop.test/{i}", i) for i in range(6))
        taken = [gate.take(hand) for _ in range(3)]
        assert all(r is not None and STARTED_META in r.meta for r in taken)
        gate.feedback(taken[0], 503)  # type: ignore[arg-type]
        assert crawler.stats.get_value(LEARNED_STAT) is None
        assert gate.take(hand) is not None and gate.take(hand) is not None  # still not paced
        gate.feedback(taken[1], 429)  # type: ignore[arg-type]
        assert crawler.stats.get_value(LEARNED_STAT) == 1
        gate.feedback(taken[2], 429)  # type: ignore[arg-type]
        assert crawler.stats.get_value(LEARNED_STAT) == 1  # a host, once
    finally:
        gate.stop_waking()
