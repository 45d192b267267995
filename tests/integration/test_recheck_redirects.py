"""A page reached by a redirect is stored with the chain that led to it (Scrapy's ``redirect_urls``,
``redirect_times``, ``redirect_ttl``, ``redirect_reasons``). Its first fetch keeps the chain, so a loop
inside that fetch is still told apart; a recheck is a new fetch and starts a chain of its own: a shop
that undid its move (the page now redirects back to the URL that first led to it) is followed, not
failed as a redirect loop, and REDIRECT_MAX_TIMES counts the hops of one fetch, not of every recheck.
Both backends, the scheduler on a real frontier store."""

from __future__ import annotations

import dataclasses

import pytest
from scrapy import Request

from recordhound.frontier.registry import FRONTIER_ID, KIND_META
from recordhound.sources.profile import RecrawlSpec
from tests.integration.test_scheduler_stateful import RedisSchedulerMachine, SchedulerMachine

CHAIN = {"redirect_urls": ["https://shop.test/release/old-name"], "redirect_times": 1, "redirect_ttl": 19,
         "redirect_reasons": [301]}


def _followed(request: Request, to: str) -> Request:
    """What Scrapy's RedirectMiddleware makes of a 301 (the meta copied, the chain extended)."""
    meta = {**request.meta, "redirect_urls": [*request.meta.get("redirect_urls", []), request.url],
            "redirect_times": request.meta.get("redirect_times", 0) + 1,
            "redirect_reasons": [*request.meta.get("redirect_reasons", []), 301]}
    return Request(to, meta=meta)


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_recheck_starts_a_redirect_chain_of_its_own(machine: type[SchedulerMachine]) -> None:
    m = machine()
    try:
        s = m.scheduler
        s.policy = dataclasses.replace(s.policy, recrawl=RecrawlSpec(intervals={"product": 0.0}))  # due at once
        old, new = CHAIN["redirect_urls"][0], "https://shop.test/release/new-name"
        assert s.claim_start() == "claimed"
        s.enqueue_request(Request(new, meta={**CHAIN, KIND_META: "product"}))  # queued as old-name's redirect
        s.start_finished()
        first = s.next_request()
        assert first is not None and first.url == new
        assert {k: first.meta[k] for k in CHAIN} == CHAIN  # its first fetch is still that chain's
        s.outcomes.response_received(first.meta[FRONTIER_ID])
        s.outcomes.output_finished(first.meta[FRONTIER_ID])
        assert s.flush_safely()

        again = s.next_request()
        assert again is not None and again.url == new, "the recheck is due at once"
        assert not [k for k in again.meta if k.startswith("redirect_")], again.meta
        # the shop undid its move: new-name redirects back to old-name
        assert s.enqueue_request(_followed(again, old)) is True
        assert s.flush_safely()
        counts = s.backend.counts()
        assert counts.failed == 0, s.backend.failures()
        handed = [r for r in (s.next_request(), s.next_request()) if r is not None]  # new-name is due again too
        moved_back = next(r for r in handed if r.url == old)
        assert moved_back.meta["redirect_urls"] == [new] and moved_back.meta["redirect_times"] == 1
        m.found.update({new, old})
        m.handed.update({r.meta[FRONTIER_ID]: r.url for r in handed})
        s.policy = dataclasses.replace(s.policy, recrawl=RecrawlSpec())  # the machine's drain ends the crawl
    finally:
        m.teardown()


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_requeued_redirect_loop_keeps_its_chain_and_fails_again_while_the_loop_lasts(
        machine: type[SchedulerMachine]) -> None:
    """A dead letter the operator queues again (`recordhound frontier retry`) is the same request: its
    chain travels with it. Were it handed out without, the hop back (to a URL already seen) would be
    dropped as a duplicate and the page counted done, the loop no longer shown anywhere."""
    m = machine()
    try:
        s = m.scheduler
        old, new = CHAIN["redirect_urls"][0], "https://shop.test/release/new-name"
        assert s.claim_start() == "claimed"
        s.enqueue_request(Request(new, meta={**CHAIN, KIND_META: "product"}))
        s.start_finished()
        for attempt in (1, 2):
            request = s.next_request()
            assert request is not None and request.url == new and request.meta["redirect_urls"] == [old]
            assert s.enqueue_request(_followed(request, old)) is False  # new → old: back into its chain
            assert s.flush_safely()
            letters = s.backend.dead_letters()
            assert [d.reason.split(":")[0] for d in letters] == ["redirect_loop"], (attempt, letters)
            if attempt == 1:
                assert s.backend.requeue_failed([letters[0].id]) == 1
        m.found.add(new)
        m.failed.append(new)
    finally:
        m.teardown()
