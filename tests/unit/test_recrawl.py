"""Recrawl arithmetic with fixed numbers: durations, when a page is due again, what is sent."""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from recordhound.frontier.recrawl import LASTMODS, Seen, changed, conditional_headers, load_state, next_state, parse_duration
from recordhound.sources.profile import RecrawlSpec

FIXED = RecrawlSpec(MappingProxyType({"product": 3600.0, "listing": 600.0}))
ADAPTIVE = RecrawlSpec(MappingProxyType({"product": 3600.0}), min_seconds=1800, max_seconds=7200)


@pytest.mark.parametrize(("text", "seconds"), [
    ("45s", 45), ("30m", 1800), ("6h", 21600), ("2d", 172800), ("1.5h", 5400), (90, 90),
    ("PT6H", 21600), ("P1DT12H", 129600), ("pt30m", 1800)])
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "6 hours", "P", "-1h", 0, True, None, "PT0S"])
def test_bad_durations(text: object) -> None:
    assert parse_duration(text) is None


def page(status: int = 200, fp: str | None = "a", etag: str | None = '"e1"') -> Seen:
    return Seen(status, etag, "Tue, 01 Dec 2026 10:00:00 GMT" if status == 200 else None, fp)


def test_fixed_schedule_keeps_its_interval_and_the_validators() -> None:
    due, raw = next_state(FIXED, "product", {}, page()) or (0, "")
    state = load_state(raw)
    assert due == 3600 and state["etag"] == '"e1"' and state["fp"] == "a"
    assert conditional_headers(state) == {"If-None-Match": '"e1"', "If-Modified-Since": "Tue, 01 Dec 2026 10:00:00 GMT"}
    assert next_state(FIXED, "product", state, page(fp="b"))[0] == 3600  # type: ignore[index]
    assert next_state(FIXED, "pagination", state, page()) is None  # not in the schedule: done for good


def test_adaptive_interval_grows_while_unchanged_and_shrinks_on_change_within_bounds() -> None:
    state = load_state(next_state(ADAPTIVE, "product", {}, page())[1])  # type: ignore[index]
    grown = next_state(ADAPTIVE, "product", state, page(304, None, None))  # 304: unchanged
    assert grown is not None and grown[0] == 5400
    capped = next_state(ADAPTIVE, "product", load_state(grown[1]), page())  # same fingerprint: unchanged
    assert capped is not None and capped[0] == 7200
    state = load_state(capped[1])
    assert state["etag"] == '"e1"'  # a 304 keeps the validators it was sent
    shrunk = next_state(ADAPTIVE, "product", state, page(fp="new"))
    assert shrunk is not None and shrunk[0] == 3600
    floor = next_state(ADAPTIVE, "product", load_state(shrunk[1]), page(fp="newer"))
    assert floor is not None and floor[0] == 1800
    assert changed({}, page()) is None and changed({"fp": "a"}, page(304, None, None)) is False


def test_what_a_callback_keeps_is_stored_and_carried_over_a_fetch_that_kept_nothing() -> None:
    read = {"https://shop.example/products/a": "2026-12-01"}
    state = load_state(next_state(FIXED, "listing", {}, page(), {LASTMODS: read})[1])  # type: ignore[index]
    assert state[LASTMODS] == read
    carried = load_state(next_state(FIXED, "listing", state, page(304, None, None))[1])  # type: ignore[index]
    assert carried[LASTMODS] == read  # a 304: the sitemap was not read, its lastmods stand
    moved = {"https://shop.example/products/a": "2026-12-02"}
    assert load_state(next_state(FIXED, "listing", carried, page(), {LASTMODS: moved})[1])[LASTMODS] == moved  # type: ignore[index]
