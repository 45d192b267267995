"""What becomes of handed-out requests, and the scheduler's duplicate cache."""

from __future__ import annotations

from recordhound.frontier.outcomes import Outcomes
from recordhound.frontier.writes import SeenCache


def _tracker() -> tuple[Outcomes, list[int], list[tuple[int, str]]]:
    done: list[int] = []
    failed: list[tuple[int, str]] = []
    return Outcomes(done.append, lambda i, r, retry_in: failed.append((i, r))), done, failed


def test_acked_only_when_output_is_exhausted_and_items_settled() -> None:
    outcomes, done, _ = _tracker()
    outcomes.handed_out(1)
    outcomes.response_received(1)
    outcomes.item_yielded(1)
    outcomes.item_yielded(1)
    outcomes.item_settled(1)
    outcomes.output_finished(1)
    assert done == []  # one item is still in the pipelines
    outcomes.item_settled(1)
    assert done == [1] and len(outcomes) == 0


def test_items_settling_before_the_output_ends() -> None:
    outcomes, done, _ = _tracker()
    outcomes.handed_out(2)
    outcomes.item_yielded(2)
    outcomes.item_settled(2)
    assert done == []
    outcomes.output_finished(2)
    assert done == [2]


def test_failure_wins_and_later_outcomes_are_ignored() -> None:
    outcomes, done, failed = _tracker()
    outcomes.handed_out(3)
    outcomes.failed(3, "http_404")
    outcomes.output_finished(3)  # the errback's (empty) output ends afterwards
    assert (done, failed) == ([], [(3, "http_404")])


def test_item_error_fails_the_request_and_replacement_acks_while_downloading() -> None:
    outcomes, done, failed = _tracker()
    outcomes.handed_out(4)
    outcomes.item_yielded(4)
    outcomes.output_finished(4)
    outcomes.item_settled(4, error="item pipeline error: boom")
    outcomes.handed_out(5)
    assert outcomes.is_downloading(5)
    outcomes.replaced(5)
    outcomes.handed_out(6)
    outcomes.response_received(6)
    assert not outcomes.is_downloading(6)  # its children are children, not replacements
    assert (done, failed) == ([5], [(4, "item pipeline error: boom")])
    assert outcomes.forget() == [6]


def test_seen_cache_is_bounded_and_keeps_the_newest() -> None:
    cache = SeenCache(3)
    cache.update({b"a"})
    cache.update({b"b", b"c"})
    cache.update({b"d"})
    assert b"a" not in cache and all(fp in cache for fp in (b"b", b"c", b"d"))
