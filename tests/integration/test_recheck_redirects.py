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
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.http import HtmlResponse

from recordhound.frontier import serialize
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


VALIDATORS = (b"If-None-Match", b"If-Modified-Since")


def _validators(request: Request) -> dict[bytes, bytes | None]:
    return {name: request.headers.get(name) for name in VALIDATORS if name in request.headers}


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_page_a_recheck_was_redirected_to_is_not_fetched_with_the_old_pages_validators(
        machine: type[SchedulerMachine]) -> None:
    """A recheck of old-name is a conditional request; Scrapy's RedirectMiddleware copies its headers
    into the request for new-name. Sent with old-name's If-None-Match / If-Modified-Since (and stored
    with them, so every later fetch too), new-name would get 304s and never be parsed. A request stored
    with validators by an older version heals when it is leased: only its own recheck state's are sent."""
    m = machine()
    try:
        s = m.scheduler
        s.policy = dataclasses.replace(s.policy, recrawl=RecrawlSpec(intervals={"product": 0.0}))  # due at once
        old, new = "https://shop.test/release/old-name", "https://shop.test/release/new-name"
        stale = "https://shop.test/release/stored-before-the-fix"
        old_validators = {b"If-None-Match": b'"old-v1"', b"If-Modified-Since": b"Mon, 01 Jan 2024 00:00:00 GMT"}
        assert s.claim_start() == "claimed"
        s.enqueue_request(Request(old, meta={KIND_META: "product"}))
        s.enqueue_request(Request(stale, meta={KIND_META: "product"}, headers=old_validators))
        s.start_finished()

        def fetched(request: Request, status: int = 200, **headers: str) -> None:
            s.engine_signals._response_received(
                HtmlResponse(request.url, status=status, body=b"<html></html>", headers=headers, request=request),
                request)
            s.outcomes.output_finished(request.meta[FRONTIER_ID])

        first = {r.url: r for r in (s.next_request(), s.next_request()) if r is not None}
        assert sorted(first) == sorted([old, stale])
        assert _validators(first[stale]) == {}, "a first fetch names no validators"
        fetched(first[old], ETag='"old-v1"', **{"Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"})
        fetched(first[stale], ETag='"stale-v1"')
        assert s.flush_safely()

        rechecks = {r.url: r for r in (s.next_request(), s.next_request()) if r is not None}
        assert _validators(rechecks[old]) == old_validators  # a recheck is a conditional request
        assert _validators(rechecks[stale]) == {b"If-None-Match": b'"stale-v1"'}, "its own state's only"
        fetched(rechecks[stale], status=304)
        # the shop moved old-name: 301 to new-name, followed by Scrapy's own middleware
        moved = HtmlResponse(old, status=301, headers={"Location": new}, request=rechecks[old])
        followed = RedirectMiddleware.from_crawler(s.crawler).process_response(rechecks[old], moved)
        assert isinstance(followed, Request) and followed.url == new
        assert s.enqueue_request(followed) is True
        assert s.flush_safely()
        queued = s.backend.lease("another-node", 10, 60.0)  # what any node (of any version) is given
        try:
            stored = {r.url: r for r in (serialize.loads(e.payload, s.spider) for e in queued)}
        finally:
            s.backend.release([e.lease for e in queued])
        assert _validators(stored[new]) == {}, "stored with old-name's validators: every later fetch would send them"

        handed = {r.url: r for r in (s.next_request(), s.next_request()) if r is not None}
        assert _validators(handed[new]) == {}, "new-name's first fetch must not carry old-name's validators"
        fetched(handed[new], ETag='"new-v1"')
        for request in handed.values():
            if request.url != new:
                fetched(request, status=304)  # old-name: its recheck is due again too
        assert s.flush_safely()
        later = {r.url: r for r in (s.next_request(), s.next_request(), s.next_request()) if r is not None}
        assert _validators(later[new]) == {b"If-None-Match": b'"new-v1"'}, "its own recheck state's only"
        s.policy = dataclasses.replace(s.policy, recrawl=RecrawlSpec())  # the rechecks end: the crawl can
        in_flight = list(later.values())
        while in_flight:
            fetched(in_flight.pop(), status=304)
            if (request := s.next_request()) is not None:
                in_flight.append(request)
        assert s.flush_safely()
        m.found.update({old, new, stale})
        m.done.extend([old, new, stale])
    finally:
        m.teardown()
