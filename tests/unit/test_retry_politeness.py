"""The retry policy's waits and the politeness arithmetic, with fixed numbers as the truth."""

from __future__ import annotations

import time
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import pytest
from scrapy.settings import Settings

from recordhound.exceptions import ConfigError
from recordhound.frontier.politeness import FULL, Limits, LocalLimiter, next_rate
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
