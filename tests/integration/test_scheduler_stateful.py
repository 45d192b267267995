"""Stateful property tests of the scheduler's pause transitions, on both real backends.

Hypothesis drives random sequences of what a crawl does to its scheduler: requests found,
the engine asking for the next one, a page finished, failed or redirected, the store taking a
lease back while its page downloads (then the page ends, fails or redirects: none of it is this
process's to write), the crawl paused (the product store behind or down) and resumed, the tick,
the product store's writer starting (no suspect is tried until it has opened: a kill meanwhile is no
suspect's doing), a graceful stop and a restart, and (ClosingInAnOutageMachine) a graceful stop that meets a
frontier outage: the close waits for the store, or the process is killed while it waits. The engine is
Scrapy's own (made, not started: the test is its loop); the store is a SQLite file or the
shared Redis under a prefix of its own. After every step the store and the process agree:
the store's leases of this node are exactly those in the lease book or waiting in the write
buffer, a handed-out request stays held through a pause, and a tick during a pause gives back
every request not yet started. At the end the crawl is drained: every URL found has exactly one
outcome, nothing is queued or leased, and no give-back counted an attempt.

Some pages are products, kept on a recrawl schedule once fetched (a profile's ``recrawl:``): each
fetch of one (its first, or a recheck once it is due again) is answered 304 Not Modified, 200 with
the body it had, or 200 with a new body (its item stored before the ack), goes unanswered in every
try (the shop down: it keeps its schedule and validators, counted in ``recheck_unanswered``, never a
dead letter), fails for good, or redirects. The schedule is due at once or in an hour (never in a
run), as the rules set it: what the store hands out never depends on the wall clock. The model says
which products may be fetched (never one scheduled an hour out, nor a dead letter), which
validators and redirect chain each fetch carries, what the recheck stats count, and (after each
write) how many entries are dead letters and scheduled.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import pytest
import redis
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from recordhound import settings as project_settings
from recordhound import signals as store_signals
from recordhound.frontier import closing as closing_module
from recordhound.frontier import hostgate as hostgate_module
from recordhound.frontier import serialize
from recordhound.frontier import suspects as suspects_module
from recordhound.frontier import upkeep as upkeep_module
from recordhound.frontier.backend import LEASED, QUEUED, Entry, FrontierBackend
from recordhound.frontier.factory import make_backend
from recordhound.frontier.politeness import holder_of
from recordhound.frontier.registry import FRONTIER_ID, KIND_META, STAT
from recordhound.frontier.retry import TAKEN_BACK, Problem
from recordhound.frontier.scheduler import FrontierScheduler
from recordhound.frontier.suspects import FRESH_RESCAN_SECONDS
from recordhound.frontier.upkeep import EXTRA_LEASE_SECONDS
from recordhound.pause import pauses
from recordhound.sources.profile import RecrawlSpec
from tests.faultproxy import FaultProxy
from tests.services import redis_url, unique_prefix

URLS = [f"https://shop.test/p/{i}" for i in range(12)]  # few: duplicates are common
OFFSITE = "https://elsewhere.test/moved"  # Scrapy's off-site filter refuses it in ``request_scheduled``
MOVED = [f"https://shop.test/moved/{i}" for i in range(4)] + [OFFSITE]  # where a page redirects to
REASON = "product store behind"
MAX_STEPS = 40
ATTEMPTS = 2  # RECORDHOUND_RETRY_MAX_ATTEMPTS here: a page failing transiently that often is a dead letter
# A retry's backoff: stored as its not-before time, and due by the next lease (a backoff still to run would
# make what the engine is handed depend on the wall clock, which Hypothesis cannot replay).
RETRY_SECONDS = RETRY_CAP_SECONDS = 1e-6
DRAIN_SECONDS = 30.0
POLITE_CONCURRENCY = 2  # requests in flight per host (every URL here is on one or two hosts)
KIND = "product"  # the link kind the recrawl schedule names
PRODUCTS = [f"https://shop.test/r/{i}" for i in range(4)]  # found with KIND: kept on the schedule once fetched
PRODUCT_MOVED = [f"https://shop.test/r/moved/{i}" for i in range(2)]  # where a product redirects (its kind copied)
SELF = "self"  # a product redirecting to its own URL
LATER = 3600.0  # a recheck this far off never comes due in a run (0.0: due at once)
NOT_MODIFIED = -1  # what a fetch answered: a 304, else the version of the body a 200 carried
RECHECK_STATS = ("first_fetched", "rechecked", "changed", "unchanged", "recheck_unanswered")


@dataclass
class Product:
    """What the store must hold of one product (the model of a page on the recrawl schedule)."""

    status: str = "to_fetch"  # to_fetch (queued, waiting a retry, or due) | leased | later (scheduled) | failed
    chain: list[str] = field(default_factory=list)  # the redirect chain it was queued with (its first fetch's)
    rechecked: bool = False  # fetched and kept on the schedule once: its fetches are rechecks, with its state
    version: int = 0  # of the body the shop serves now
    fp: int | None = None  # the body version its state keeps (None: no 200 recorded yet)
    etag: str | None = None  # the validator its state keeps (sent as If-None-Match)


def _body(url: str, version: int) -> bytes:
    return f"<html>{url} v{version}</html>".encode()


def _etag(url: str, version: int) -> str:
    return f'"{url.rsplit("/", 1)[1]}-v{version}"'


class PauseSpider(Spider):
    name = "pausetest"


class SchedulerMachine(RuleBasedStateMachine):
    """A scheduler on a SQLite file of its own (RedisSchedulerMachine: on the shared Redis)."""

    RECHECKS = True  # products are found (kept on the recrawl schedule once fetched)

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="scheduler-stateful-")
        self.found: set[str] = set()  # every URL enqueued (the model)
        self.handed: dict[int, str] = {}  # frontier id → URL: given to the engine, no outcome yet
        self.storing: dict[int, str] = {}  # frontier id → URL: output exhausted, its item not settled yet
        self.done: list[str] = []
        self.failed: list[str] = []
        self.tries: dict[str, int] = {}  # URL -> transient failures recorded (each one an attempt)
        self.paused = False
        self.store_opening = False  # the product store's writer is starting (signals.store_opening)
        self.given_back_on_tick = False  # a tick ran since the pause began
        self.restarts = 0
        self.kills = 0
        self.products: dict[str, Product] = {}  # URL -> the model of a page on the recrawl schedule
        self.requests: dict[int, Request] = {}  # frontier id -> the request handed out (responses, redirects)
        self.answered: dict[int, int] = {}  # frontier id -> what its fetch answered (NOT_MODIFIED or a body version)
        self.due_in = LATER  # a product's next fetch, from the outcome of this one
        self.expected: Counter[str] = Counter()  # the recheck stats this process must count
        self._store: FrontierBackend | None = None
        self.scheduler = self._open()

    def store_settings(self) -> dict[str, Any]:
        return {"JOBDIR": self.folder}

    @property
    def store(self) -> FrontierBackend:
        """The store as the test reads it, on a connection of its own: the scheduler's calls are bounded
        (0.3 s in the outage machines, a bound a loaded machine passes with no outage at all), and a read
        of the test's must not make the scheduler reconnect."""
        if self._store is None:
            self._store = self.direct_store()
            self._store.open()
        return self._store

    def direct_store(self) -> FrontierBackend:
        """The store as another process reads it (not through RedisClosingInAnOutageMachine's proxy)."""
        return make_backend(self.scheduler.config, PauseSpider.name, timeout=5.0)

    def _open(self) -> FrontierScheduler:
        values = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
        values.update({"TWISTED_REACTOR": None, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "WARNING",
                       "RECORDHOUND_FRONTIER_LEASE_BATCH": 3, "RECORDHOUND_NODE_ID": f"n{self.restarts}",
                       "RECORDHOUND_RETRY_BASE_SECONDS": RETRY_SECONDS, "RECORDHOUND_RETRY_CAP_SECONDS": RETRY_CAP_SECONDS,
                       "RECORDHOUND_RETRY_MAX_ATTEMPTS": ATTEMPTS,
                       **self.store_settings()})
        crawler = get_crawler(PauseSpider, values)
        crawler.spider = crawler._create_spider()
        crawler.engine = crawler._create_engine()  # Scrapy's engine, not started: pause() and paused are its own
        scheduler = FrontierScheduler.from_crawler(crawler)
        crawl = scheduler.opening.prepare(crawler.spider)
        scheduler.policy = replace(scheduler.policy, recrawl=self._recrawl())  # the profile's `recrawl:`
        scheduler.opening.join(crawl)
        scheduler.phase = "open"  # no tick loop or renewer: the rules run the tick
        self.expected = Counter()  # a new process: its stats start at 0
        self.clock = scheduler.engine_signals.clock = Clock()  # the reactor is not running: the rules move time
        self.store_opening = False  # a new process: its store has said nothing yet
        if self.paused:
            pauses(crawler).hold(REASON)
        return scheduler

    @property
    def crawler(self) -> Any:
        return self.scheduler.crawler

    def _recrawl(self) -> RecrawlSpec:
        return RecrawlSpec(MappingProxyType({KIND: self.due_in}))

    def _schedule(self, due_in: float) -> None:
        self.due_in = due_in
        self.scheduler.policy = replace(self.scheduler.policy, recrawl=self._recrawl())

    def _in_flight(self, products: bool | None = None, rechecks: bool = False) -> list[int]:
        """Pages handed out, no outcome yet (``products``: only products, or only the others;
        ``rechecks``: only products fetched and scheduled before)."""
        ids = sorted(self.handed)
        if products is not None:
            ids = [i for i in ids if (self.handed[i] in self.products) == products]
        if rechecks:
            ids = [i for i in ids if (p := self.products.get(self.handed[i])) is not None and p.rechecked]
        return ids

    # ---- the model's outcomes --------------------------------------------------------------
    def _handed_out(self, request: Request) -> None:
        """A product is fetched only while it is to be fetched (never while scheduled an hour out, nor a dead
        letter): nothing is fetched twice within one due period. A recheck is a conditional request with its
        own state's validators, and a fetch of its own (no redirect chain); a first fetch keeps its chain."""
        self.requests[request.meta[FRONTIER_ID]] = request
        if (product := self.products.get(request.url)) is None:
            return
        assert product.status == "to_fetch", f"{request.url} handed out while {product.status}"
        assert request.headers.get("If-None-Match") == (product.etag.encode() if product.etag else None), \
            (request.url, request.headers.get("If-None-Match"), product)
        assert request.meta.get("redirect_urls", []) == ([] if product.rechecked else product.chain), \
            (request.url, request.meta.get("redirect_urls"), product)
        product.status = "leased"

    def _acked(self, frontier_id: int, url: str) -> None:
        """Acked: a product is kept on its schedule (its state: what its fetch answered), the rest done."""
        answer = self.answered.pop(frontier_id, None)
        if (product := self.products.get(url)) is None:
            self.done.append(url)
            return
        self.expected["rechecked" if product.rechecked else "first_fetched"] += 1
        if product.rechecked and answer == NOT_MODIFIED:
            self.expected["unchanged"] += 1
        elif product.rechecked and answer is not None and product.fp is not None:
            self.expected["changed" if answer != product.fp else "unchanged"] += 1
        if answer is not None and answer != NOT_MODIFIED:
            product.fp, product.etag = answer, _etag(url, answer)
        product.rechecked = True
        self._kept_on_schedule(url, product)

    def _kept_on_schedule(self, url: str, product: Product) -> None:
        product.status = "later" if self.due_in else "to_fetch"
        self.tries.pop(url, None)  # each recheck cycle starts its tries again

    def _dead(self, frontier_id: int, url: str) -> None:
        self.answered.pop(frontier_id, None)
        if (product := self.products.get(url)) is None:
            self.failed.append(url)
        else:
            product.status = "failed"

    def _back_in_queue(self, frontier_id: int, url: str) -> None:
        """A retry waiting its backoff, or a lease given back or lost: fetched again, with the same state."""
        self.answered.pop(frontier_id, None)
        if (product := self.products.get(url)) is not None:
            product.status = "to_fetch"

    def _found_product(self, url: str, chain: list[str]) -> None:
        if url not in self.found:
            self.found.add(url)
            self.products[url] = Product(chain=chain)

    # ---- rules ----------------------------------------------------------------------------
    @initialize(picked=st.lists(st.sampled_from(URLS), max_size=4),
                products=st.lists(st.sampled_from(PRODUCTS), max_size=2), due_in=st.sampled_from([0.0, LATER]))
    def start_requests(self, picked: list[str], products: list[str], due_in: float) -> None:
        assert self.scheduler.claim_start() == "claimed"
        for url in picked:
            self.scheduler.enqueue_request(Request(url))
            self.found.add(url)
        if self.RECHECKS:
            self._schedule(due_in)
            self._enqueue_products(products)
        self.scheduler.start_finished()

    @rule(picked=st.lists(st.sampled_from(URLS), min_size=1, max_size=5))
    def find(self, picked: list[str]) -> None:
        for url in picked:
            self.scheduler.enqueue_request(Request(url))
            self.found.add(url)

    @rule()
    def engine_asks(self) -> None:
        request = self.scheduler.next_request()
        if self.paused:
            assert request is None, "a paused engine is given nothing"
            return
        if request is None:
            return
        frontier_id, key = request.meta[FRONTIER_ID], self._model_key(request)
        assert frontier_id not in self.handed, "a request handed out twice"
        assert key not in self.done + self.failed, f"{key} handed out after its outcome"
        self._handed_out(request)
        self.handed[frontier_id] = key

    def _model_key(self, request: Request) -> str:
        """How the model names what ``request`` fetches (its URL; a subclass may name more)."""
        return request.url

    @precondition(lambda self: not self.store_opening and self.scheduler.suspects.trying is None)
    @rule()
    def the_store_starts_opening(self) -> None:
        """The product store's writer starts (at a process's start, before any suspect is tried): no suspect
        is tried until it has opened, so a kill in that window is no suspect's doing; fresh pages go on."""
        self.crawler.signals.send_catch_log(store_signals.store_opening)
        self.store_opening = True

    @precondition(lambda self: self.store_opening)
    @rule()
    def the_store_opened(self) -> None:
        self.crawler.signals.send_catch_log(store_signals.store_opened)
        self.store_opening = False

    @invariant()
    def no_suspect_is_tried_while_the_store_opens(self) -> None:
        assert self.scheduler.suspects.store_opening == self.store_opening, "the store's signal was not heard"
        if self.store_opening:
            assert self.scheduler.suspects.trying is None, "a suspect tried before the store opened"

    @precondition(lambda self: self.handed)
    @rule(data=st.data(), ok=st.booleans())
    def page_ends(self, data: st.DataObject, ok: bool) -> None:
        frontier_id = data.draw(st.sampled_from(sorted(self.handed)), label="page")
        url = self.handed.pop(frontier_id)
        outcomes = self.scheduler.outcomes
        if ok:
            outcomes.response_received(frontier_id)
            outcomes.output_finished(frontier_id)
            self._acked(frontier_id, url)
        else:
            outcomes.failed(frontier_id, "http_404")  # a recheck too: the page is gone
            self._dead(frontier_id, url)

    @precondition(lambda self: self.handed)
    @rule(data=st.data(), how=st.sampled_from(["download_error", "error_response"]))
    def page_fails_transiently(self, data: st.DataObject, how: str) -> None:
        """A refused connection (the errback alone) or an HTTP 503 (the errback, then the output pass):
        the request goes back to the store with its backoff as a not-before time, one attempt counted;
        at its last attempt it is a dead letter. A give-back, a lease taken back or a kill counts none."""
        self._fails_transiently(data.draw(st.sampled_from(sorted(self.handed)), label="page"), how)

    @precondition(lambda self: self._in_flight(rechecks=True))
    @rule(data=st.data(), how=st.sampled_from(["download_error", "error_response"]))
    def recheck_goes_unanswered(self, data: st.DataObject, how: str) -> None:
        """The shop is down while a product is rechecked: one of its tries fails transiently. Unanswered in
        every try, the recheck keeps its schedule and validators (recheck_unanswered), never a dead letter."""
        self._fails_transiently(data.draw(st.sampled_from(self._in_flight(rechecks=True)), label="page"), how)

    def _fails_transiently(self, frontier_id: int, how: str) -> None:
        url = self.handed.pop(frontier_id)
        s = self.scheduler
        if how == "error_response":
            s.outcomes.response_received(frontier_id)
            retry_in = s.report(frontier_id, Problem("http_503", "HTTP 503", transient=True))
            s.outcomes.output_finished(frontier_id)
        else:
            retry_in = s.report(frontier_id, Problem("download_failed", "refused", transient=True))
        self.tries[url] = self.tries.get(url, 0) + 1
        if self.tries[url] == ATTEMPTS:
            assert retry_in is None, f"{url} retried after {ATTEMPTS} attempts"
            if (product := self.products.get(url)) is not None and product.rechecked:
                self.answered.pop(frontier_id, None)
                self.expected["recheck_unanswered"] += 1
                self._kept_on_schedule(url, product)  # its state kept: the same validators next time
            else:
                self._dead(frontier_id, url)
        else:
            assert isinstance(retry_in, float) and 0 < retry_in <= RETRY_CAP_SECONDS, \
                f"{url} after {self.tries[url]} attempts: {retry_in!r}"
            self._back_in_queue(frontier_id, url)

    @precondition(lambda self: self.handed)
    @rule(data=st.data())
    def page_parsed_its_item_goes_to_the_store(self, data: st.DataObject) -> None:
        """The callback yielded an item and its output is exhausted; the item waits for the product
        store (the page has no outcome until it settles)."""
        frontier_id = data.draw(st.sampled_from(sorted(self.handed)), label="page")
        outcomes = self.scheduler.outcomes
        outcomes.response_received(frontier_id)
        outcomes.item_yielded(frontier_id)
        outcomes.output_finished(frontier_id)
        self.storing[frontier_id] = self.handed.pop(frontier_id)

    @precondition(lambda self: self.storing)
    @rule(data=st.data())
    def item_stored(self, data: st.DataObject) -> None:
        frontier_id = data.draw(st.sampled_from(sorted(self.storing)), label="page")
        self.scheduler.outcomes.item_settled(frontier_id)
        self._acked(frontier_id, self.storing.pop(frontier_id))

    @precondition(lambda self: self._in_flight(products=True))
    @rule(data=st.data(), answer=st.sampled_from(["not_modified", "same", "new"]))
    def shop_answers(self, data: st.DataObject, answer: str) -> None:
        """A product's fetch is answered: 304 Not Modified (only to a conditional request: nothing changes,
        kept on its schedule), 200 with the body it had, or 200 with a new body (its item goes to the
        product store; the page is acked once the item is stored)."""
        self._answer(data.draw(st.sampled_from(self._in_flight(products=True)), label="page"), answer)

    def _answer(self, frontier_id: int, answer: str) -> None:
        url = self.handed.pop(frontier_id)
        request, product, s = self.requests[frontier_id], self.products[url], self.scheduler
        if answer == "not_modified" and product.etag is None:
            answer = "same"  # no validator sent: the shop answers 200
        if answer == "new":
            product.version += 1
        if answer == "not_modified":
            assert product.etag is not None
            response = HtmlResponse(url, status=304, headers={"ETag": product.etag}, request=request)
            self.answered[frontier_id] = NOT_MODIFIED
        else:
            response = HtmlResponse(url, body=_body(url, product.version),
                                    headers={"ETag": _etag(url, product.version)}, request=request)
            self.answered[frontier_id] = product.version
        s.engine_signals._response_received(response, request)
        if answer == "new":
            s.outcomes.item_yielded(frontier_id)
            s.outcomes.output_finished(frontier_id)
            self.storing[frontier_id] = url
        else:
            s.outcomes.output_finished(frontier_id)
            self._acked(frontier_id, url)

    @precondition(lambda self: self._in_flight(products=True))
    @rule(data=st.data(), to=st.sampled_from([SELF, *PRODUCT_MOVED, PRODUCTS[0], OFFSITE]))
    def product_redirects(self, data: st.DataObject, to: str) -> None:
        """A product's fetch (its first, or a recheck) redirects. Scrapy's RedirectMiddleware copies the meta
        (its kind: the new URL is a product too) and the headers (a recheck's validators, which name the old
        page) and extends the chain. A hop back into the chain is a loop (a recheck's chain starts at its own
        URL: a shop that undid a move is followed), off-site is dropped: dead letters. Otherwise the page is
        kept on its schedule and the new URL queued, unless seen."""
        self._product_redirects(data.draw(st.sampled_from(self._in_flight(products=True)), label="page"), to)

    def _product_redirects(self, frontier_id: int, to: str) -> None:
        url = self.handed.pop(frontier_id)
        request = self.requests[frontier_id]
        to = url if to == SELF else to
        chain = [*request.meta.get("redirect_urls", []), url]
        if to == OFFSITE or to in chain:
            self._dead(frontier_id, url)
        else:  # before the engine's next ask, which may be handed either (due at once)
            self._acked(frontier_id, url)
            self._found_product(to, chain)
        self._engine_schedules(request.replace(url=to, meta={**request.meta, "redirect_urls": chain,
                                                             "redirect_times": len(chain)}))

    @precondition(lambda self: self._in_flight(products=False))
    @rule(data=st.data(), to=st.sampled_from(MOVED))
    def page_redirects(self, data: st.DataObject, to: str) -> None:
        """Scrapy's RedirectMiddleware queues the new URL in the page's place (its meta copied)."""
        frontier_id = data.draw(st.sampled_from(self._in_flight(products=False)), label="page")
        url = self.handed.pop(frontier_id)
        self._engine_schedules(_redirect(url, to, frontier_id))
        if to in (url, OFFSITE):
            self.failed.append(url)  # a redirect loop, or a redirect the engine dropped (redirect_dropped)
        else:
            self.done.append(url)  # replaced: its lease is acked once the buffer holding the redirect is written
            self.found.add(to)

    @precondition(lambda self: self.handed)
    @rule(data=st.data(), then=st.sampled_from(["redirects", "ends", "fails", "download_error", "error_response"]),
          to=st.sampled_from(MOVED))
    def store_takes_a_lease_back(self, data: st.DataObject, then: str, to: str) -> None:
        """The store no longer has a lease this process holds (it came back from an older snapshot, or
        the lease expired and was reclaimed while the process stalled); the process re-syncs while the
        page is still downloading. Whatever the page does next is not this process's to write: the
        URL is queued again and gets its one outcome when fetched again (maybe at once, by this
        process: the engine asks for its next request before the redirect's look)."""
        frontier_id = data.draw(st.sampled_from(sorted(self.handed)), label="page")
        url = self.handed.pop(frontier_id)
        s = self.scheduler
        held = s.book.get(frontier_id)
        assert held is not None
        assert s.backend.release([held.lease]) == 1
        s.upkeep.resync()
        assert frontier_id not in s.book
        self._back_in_queue(frontier_id, url)
        if then == "redirects":
            self._engine_schedules(_redirect(url, to, frontier_id))
        elif then == "download_error":  # the errback, and nothing after it
            assert s.report(frontier_id, Problem("download_failed", "refused", transient=True)) is TAKEN_BACK, \
                "the catalog spider's errback must neither record the page as failed nor count a retry of it"
            assert frontier_id not in s.outcomes
        elif then == "error_response":  # the errback, then (later) the spider middleware's pass over its output
            s.outcomes.response_received(frontier_id)
            assert s.report(frontier_id, Problem("http_503", "HTTP 503", transient=True)) is TAKEN_BACK
            self.engine_asks()  # the engine may ask in between: not for this hand-out's id
            assert frontier_id not in self.handed, "the same id handed out again before its output pass"
            s.outcomes.output_finished(frontier_id)
        elif then == "ends":
            s.outcomes.response_received(frontier_id)
            s.outcomes.output_finished(frontier_id)
        else:
            s.outcomes.failed(frontier_id, "http_500")

    def _engine_schedules(self, redirect: Request) -> None:
        """Scrapy's order: ``request_scheduled``, then the scheduler (a refusal: ``request_dropped``);
        the engine asks for its next request (scheduled when the download ended) before the reactor
        runs the frontier's look at what it scheduled."""
        s, spider = self.scheduler, self.crawler.spider
        s.engine_signals._scheduled(redirect, spider)
        if redirect.url != OFFSITE and not s.enqueue_request(redirect):
            s.engine_signals._dropped(redirect, spider)
        self.engine_asks()
        self.clock.advance(0)

    @precondition(lambda self: not self.paused)
    @rule()
    def pause(self) -> None:
        pauses(self.crawler).hold(REASON)
        self.paused, self.given_back_on_tick = True, False

    @precondition(lambda self: self.paused)
    @rule()
    def resume(self) -> None:
        pauses(self.crawler).release(REASON, quiet=True)
        self.paused = False

    @rule()
    def tick(self) -> None:
        self.scheduler.upkeep.tick()
        self.given_back_on_tick = self.paused

    @rule()
    def flush(self) -> None:
        assert self.scheduler.flush_safely()
        self._store_agrees()

    def _store_agrees(self) -> None:
        """Every outcome decided is written now: the store's dead letters and rechecks scheduled an hour
        out are the model's (an unanswered recheck is no dead letter; a recheck due at once is not scheduled)."""
        counts = self.store.counts()
        statuses = Counter(product.status for product in self.products.values())
        assert (counts.failed, counts.scheduled) == (len(self.failed) + statuses["failed"], statuses["later"]), \
            (counts, statuses)

    @precondition(lambda self: self.RECHECKS)
    @rule(due_in=st.sampled_from([0.0, LATER]))
    def recrawl_interval_is(self, due_in: float) -> None:
        """The schedule a product is kept on from its next outcome: due again at once (the next lease may
        take it) or in an hour (it must not be fetched again in this run)."""
        self._schedule(due_in)

    @precondition(lambda self: self.RECHECKS)
    @rule(picked=st.lists(st.sampled_from(PRODUCTS), min_size=1, max_size=3))
    def find_products(self, picked: list[str]) -> None:
        self._enqueue_products(picked)

    def _enqueue_products(self, picked: list[str]) -> None:
        for url in picked:
            self.scheduler.enqueue_request(Request(url, meta={KIND_META: KIND}, priority=1))  # leased first
            self._found_product(url, [])

    @precondition(lambda self: self.restarts < 2)
    @rule()
    def graceful_stop_and_restart(self) -> None:
        """Scrapy finishes the pages in flight before it closes the scheduler; the next process
        (another node id) takes over the queue."""
        self._finish_in_flight()
        assert self.scheduler.close("shutdown") is None  # the store answers: closed at once, nothing to wait for
        self.restarts += 1
        self.scheduler = self._open()
        self.given_back_on_tick = False

    @precondition(lambda self: self.kills < 2)
    @rule()
    def killed_after_a_write_and_restarted(self) -> None:
        """kill -9 right after a write: nothing returned, the requests in flight have no outcome. The
        process comes back under the same node id and takes its leases back: each is a suspect now,
        handed out one at a time."""
        s = self.scheduler
        assert s.flush_safely()
        for frontier_id, url in [*self.handed.items(), *self.storing.items()]:
            self._back_in_queue(frontier_id, url)
        self.handed.clear()  # fetched again: each gets its one outcome then
        self.storing.clear()
        assert s.backend is not None
        s.backend.leave(s.node, s.token)  # its registration is gone (a dead pid): the id is free again
        s.backend.close()
        self.kills += 1
        self.scheduler = self._open()
        self.given_back_on_tick = False

    def _finish_in_flight(self) -> None:
        """Scrapy finishes the pages in flight, and their items, before it closes the scheduler."""
        outcomes = self.scheduler.outcomes
        for frontier_id in sorted(self.handed):
            outcomes.response_received(frontier_id)
            outcomes.output_finished(frontier_id)
            self._acked(frontier_id, self.handed.pop(frontier_id))
        for frontier_id in sorted(self.storing):
            outcomes.item_settled(frontier_id)
            self._acked(frontier_id, self.storing.pop(frontier_id))

    # ---- invariants -----------------------------------------------------------------------
    @invariant()
    def suspects_are_tried_one_at_a_time(self) -> None:
        """A suspect's try lasts until its outcome is written: a death before that is its doing.
        While one is tried, no other is handed out (its items still storing, its ack in the buffer)."""
        s = self.scheduler
        states = self.store.states()
        open_ = {*self.handed, *self.storing, *(lease.id for lease in s.buffer.leases())}
        tried = sorted(i for i in open_ if (state := states.get(i)) is not None and state.lost >= 1)
        assert len(tried) <= 1, f"suspects tried together: {tried}"

    @invariant()
    def a_node_holds_one_lease_batch_of_suspects_at_most(self) -> None:
        """A node holding suspects leases fresh pages only: the other suspects stay queued for
        other nodes, not gathered in one hand (tried one at a time there)."""
        s = self.scheduler
        assert len(s.book.suspects) <= s.config.lease_batch, sorted(s.book.suspects)

    @invariant()
    def the_store_holds_what_the_process_holds(self) -> None:
        s = self.scheduler
        assert s.phase == "open" and not self.crawler.stats.get_value(STAT + "tick_errors")
        leased = self.store.counts().leased
        assert leased.get(s.node, 0) == len(s.book) + len(s.buffer.leases()), (leased, len(s.book))
        assert sum(leased.values()) == leased.get(s.node, 0), "a stopped node left leases behind"
        assert all(frontier_id in s.book for frontier_id in {*self.handed, *self.storing}), \
            "a started request lost its lease"

    @invariant()
    def a_tick_during_a_pause_gives_back_what_has_not_started(self) -> None:
        if self.paused and self.given_back_on_tick:
            assert not self.scheduler.book.in_hand

    @invariant()
    def the_recheck_stats_count_what_the_model_says(self) -> None:
        stats = self.crawler.stats
        assert {name: stats.get_value(STAT + name, 0) for name in RECHECK_STATS} == \
            {name: self.expected[name] for name in RECHECK_STATS}

    # ---- the end ----------------------------------------------------------------------------
    def teardown(self) -> None:
        s = self.scheduler
        closed = False
        try:
            if self.due_in != LATER and s.policy.recrawl == self._recrawl():  # (a test may have set its own)
                self._schedule(LATER)  # the rechecks due at once are fetched once more, then the crawl ends
            self._drain()
            assert s.close("finished") is None
            closed = True
        finally:
            if not closed:
                with contextlib.suppress(Exception):
                    s.close("failed")
            store = self.store
            try:
                if closed:
                    assert store.counts().status == "completed"
            finally:
                store.reset()
                store.close()
                self._store = None
                shutil.rmtree(self.folder, ignore_errors=True)

    def _drain(self) -> None:
        """Resume, finish what is in flight, then fetch until nothing is left (a retry waits for its
        backoff, a host for its slot): the crawl's end."""
        s = self.scheduler
        if self.paused:
            pauses(self.crawler).release(REASON, quiet=True)
        if self.store_opening:
            self.the_store_opened()
        self._finish_in_flight()
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline:
            request = s.next_request()
            if request is not None:
                self._handed_out(request)
                s.outcomes.response_received(request.meta[FRONTIER_ID])
                s.outcomes.output_finished(request.meta[FRONTIER_ID])
                self._acked(request.meta[FRONTIER_ID], request.url)
                continue
            self._flushed()
            counts = self.store.counts()
            if (counts.to_fetch, counts.leased_total) == (0, 0):
                break
            time.sleep(0.05)  # a host's slot (ClosingInAnOutageMachine)
        self._flushed()
        counts = self.store.counts()
        assert (counts.to_fetch, counts.leased_total) == (0, 0), counts
        assert sorted(self.done + self.failed + list(self.products)) == sorted(self.found), \
            "each URL found has one outcome"
        statuses = Counter(product.status for product in self.products.values())
        assert set(statuses) <= {"later", "failed"}, statuses  # a product is kept on its schedule or gone
        assert (counts.done, counts.failed, counts.scheduled) == \
            (len(self.done) + statuses["later"], len(self.failed) + statuses["failed"], statuses["later"]), counts
        assert self.store.verify() == []

    def _flushed(self) -> None:
        """The drain's write of what the buffer holds. No outage is made here, but a loaded machine can pass
        the outage machines' 0.3 s bound on a call: the crawl then pauses until a tick finds the store again,
        as a running crawl's does, and the write is made then."""
        s = self.scheduler
        if not s.flush_safely():
            assert s.outage.down and s.phase != "broken", "a frontier error, not a time-out"
            self._tick_until_the_store_answers()
            assert s.flush_safely()

    def _tick_until_the_store_answers(self) -> None:
        s = self.scheduler
        deadline = time.monotonic() + 30
        while s.outage.down and time.monotonic() < deadline:
            time.sleep(closing_module.WAIT_SECONDS)
            s.upkeep.tick()
        assert not s.outage.down, "the store did not answer again within 30 s"

def _killed_holding(m: SchedulerMachine, pages: int, handed: int) -> list[str]:
    """Start a crawl of ``pages`` URLs (a host each: no politeness slot waits), hand ``handed`` to the
    engine, then kill -9 and restart: the leases held come back as suspects. Returns the URLs."""
    s = m.scheduler
    assert s.claim_start() == "claimed"
    urls = [f"https://shop{i}.test/p" for i in range(pages)]
    for url in urls:
        s.enqueue_request(Request(url))
    s.start_finished()
    m.found.update(urls)
    for _ in range(handed):
        m.engine_asks()
    m.killed_after_a_write_and_restarted()
    return urls


def _redirect(url: str, to: str, frontier_id: int) -> Request:
    return Request(to, meta={FRONTIER_ID: frontier_id, "redirect_urls": [url]})


class RedisSchedulerMachine(SchedulerMachine):
    def store_settings(self) -> dict[str, Any]:
        if not hasattr(self, "prefix"):
            self.prefix = unique_prefix()  # reset() at teardown: never FLUSHDB
        return {"RECORDHOUND_REDIS_URL": redis_url(), "RECORDHOUND_REDIS_PREFIX": self.prefix}


class RecrawlMachine(SchedulerMachine):
    """The same machine on a crawl of products (and the few start pages): with every rule on, a product's
    fetch, its write, the schedule coming due and the next fetch seldom line up within one run's steps."""

    def find(self, picked: list[str]) -> None:  # not a rule here: the pages found later are products
        raise AssertionError("not a rule of RecrawlMachine")

    @precondition(lambda self: not self.paused)
    @rule(data=st.data(), answer=st.sampled_from(["not_modified", "same", "new", "down", "redirects"]))
    def a_product_is_fetched(self, data: st.DataObject, answer: str) -> None:
        """The tick writes what the buffer holds (a product due at once is due from then on), Scrapy's loop
        asks until a product is handed out (or nothing more is), and the shop answers it, redirects it, or
        is down: the fetch fails transiently in every try (each retry asked for again), unanswered."""
        if not (products := self._in_flight(products=True)) and (found := self._ask_for(self.products)) is not None:
            products = [found]
        if not products:
            return
        frontier_id = data.draw(st.sampled_from(products), label="page")
        if answer == "redirects":
            self._product_redirects(frontier_id, data.draw(st.sampled_from([SELF, *PRODUCT_MOVED, PRODUCTS[0], OFFSITE])))
        elif answer != "down":
            self._answer(frontier_id, answer)
        else:
            url, tries = self.handed[frontier_id], ATTEMPTS
            trying: int | None = frontier_id
            while trying is not None and tries:
                self._fails_transiently(trying, data.draw(st.sampled_from(["download_error", "error_response"])))
                tries -= 1
                trying = self._ask_for({url}) if tries else None  # its retry: due by the next lease

    def _ask_for(self, urls: Any) -> int | None:
        """The tick, then Scrapy's loop asks until one of ``urls`` is handed out (or nothing more is)."""
        self.tick()
        for _ in range(6):
            before = set(self.handed)
            self.engine_asks()
            if not (new := set(self.handed) - before):
                return None
            if (frontier_id := new.pop()) is not None and self.handed[frontier_id] in urls:
                return frontier_id
        return None


class RedisRecrawlMachine(RecrawlMachine, RedisSchedulerMachine):
    pass


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_random_pause_sequences_lose_no_request_and_start_nothing_while_paused(
        machine: type[SchedulerMachine]) -> None:
    run_state_machine_as_test(machine, settings=settings(
        max_examples=MAX_EXAMPLES[machine], stateful_step_count=MAX_STEPS, deadline=None, database=None))


@pytest.mark.parametrize("machine", [RecrawlMachine, RedisRecrawlMachine], ids=["embedded", "redis"])
def test_random_recheck_sequences_keep_each_page_on_its_schedule_and_fetch_it_once_per_due_time(
        machine: type[SchedulerMachine]) -> None:
    """Rechecks answered 304 or 200 (changed or not), unanswered in every try, failed or redirected, the
    schedule due at once or in an hour, among pauses, ticks, lease take-backs, stops and kills."""
    run_state_machine_as_test(machine, settings=settings(
        max_examples=MAX_EXAMPLES[machine], stateful_step_count=MAX_STEPS, deadline=None, database=None))


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_fresh_pages_are_handed_out_beside_the_suspect_tried_and_the_next_waits_for_its_written_outcome(
        machine: type[SchedulerMachine]) -> None:
    """After a kill -9 the pages the node held are suspects, tried one at a time; the engine is not
    starved meanwhile: every fresh page of the queue is handed out beside the one tried, in the
    same run of the engine's asks. The next suspect waits until the outcome of the one tried is
    written, its item stored first."""
    m = machine()
    try:
        urls = _killed_holding(m, pages=24, handed=6)  # two lease batches of 3 in the engine at the kill
        s = m.scheduler
        while (request := s.next_request()) is not None:
            m.handed[request.meta[FRONTIER_ID]] = request.url
        states = m.store.states()
        tried = [url for i, url in m.handed.items() if states[i].lost >= 1]
        assert len(tried) == 1 and sorted(m.handed.values()) == sorted([*tried, *urls[6:]]), m.handed
        (tried_id,) = [i for i in m.handed if states[i].lost >= 1]
        outcomes = s.outcomes
        outcomes.response_received(tried_id)
        outcomes.item_yielded(tried_id)
        outcomes.output_finished(tried_id)
        assert s.next_request() is None, "the next suspect was handed out while the item of the one tried waits"
        outcomes.item_settled(tried_id)
        m.done.append(m.handed.pop(tried_id))
        request = s.next_request()
        assert request is not None and states[request.meta[FRONTIER_ID]].lost >= 1
        assert not s.buffer.leases(), "the outcome of the suspect tried is written before the next is handed out"
        m.handed[request.meta[FRONTIER_ID]] = request.url
    finally:
        m.teardown()


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_suspect_whose_lease_the_store_took_back_is_tried_until_its_page_leaves_the_engine(
        machine: type[SchedulerMachine]) -> None:
    """The store takes back the lease of the suspect tried (the node stalled past it) while its page
    is still in the engine: no other suspect is handed out until that page is over (a death
    meanwhile may be its doing; it must not be charged to another)."""
    m = machine()
    try:
        _killed_holding(m, pages=9, handed=3)
        s = m.scheduler
        states = m.store.states()
        while (request := s.next_request()) is not None:
            m.handed[request.meta[FRONTIER_ID]] = request.url
        (tried_id,) = [i for i in m.handed if states[i].lost >= 1]
        held = s.book.get(tried_id)
        assert held is not None and s.backend.release([held.lease]) == 1  # expired while the node stalled
        s.upkeep.resync()
        s.upkeep.tick()
        while (request := s.next_request()) is not None:
            assert states[request.meta[FRONTIER_ID]].lost == 0, "a suspect handed out while another is in the engine"
            m.handed[request.meta[FRONTIER_ID]] = request.url
        s.outcomes.response_received(tried_id)
        s.outcomes.output_finished(tried_id)  # over: not this process's to write
        m.handed.pop(tried_id)
        s.upkeep.tick()
        request = s.next_request()
        assert request is not None and m.store.states()[request.meta[FRONTIER_ID]].lost >= 1
        m.handed[request.meta[FRONTIER_ID]] = request.url
    finally:
        m.teardown()


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_node_trying_a_suspect_leases_fresh_pages_only_the_other_suspects_stay_queued(
        machine: type[SchedulerMachine]) -> None:
    """A node died holding 12 pages (4 lease batches): the next node takes one batch of them, tries
    one, and leases only fresh pages beside it; the other suspects stay queued, for another node."""
    m = machine()
    try:
        urls = _killed_holding(m, pages=24, handed=12)
        s = m.scheduler
        while (request := s.next_request()) is not None:
            m.handed[request.meta[FRONTIER_ID]] = request.url
        states = m.store.states()
        suspects = {i for i, state in states.items() if state.lost >= 1}
        assert len(suspects) == 12
        held = {i for i in suspects if states[i].state == LEASED}
        assert len(held) == s.config.lease_batch, f"{len(held)} suspects in one hand"
        assert all(states[i].state == QUEUED for i in suspects - held)
        fresh = sorted(url for i, url in m.handed.items() if i not in suspects)
        assert fresh == sorted(urls[12:]), "every fresh page is handed out beside the suspect tried"
    finally:
        m.teardown()


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_redirect_back_into_its_own_chain_fails_the_page_and_queues_nothing_even_when_unseen(
        machine: type[SchedulerMachine]) -> None:
    """loop-b redirects back to loop-a, the first URL of its chain: the page fails (redirect_loop)
    and the hop back is not queued. Normally loop-a is seen anyway; after the store came back from an
    older snapshot it may not be, and the hop was queued as new work: a second dead letter for the
    same loop (CI: test_redis_restored_from_a_snapshot_one_second_old..., before_seeding)."""
    m = machine()
    try:
        s = m.scheduler
        loop_a, loop_b = "https://shop.test/loop-a", "https://shop.test/loop-b"
        assert s.claim_start() == "claimed"
        s.enqueue_request(Request(loop_b, meta={"redirect_urls": [loop_a]}))  # queued as loop-a's redirect
        s.start_finished()
        request = s.next_request()
        assert request is not None and request.url == loop_b
        frontier_id = request.meta[FRONTIER_ID]
        hop = Request(loop_a, meta={FRONTIER_ID: frontier_id, "redirect_urls": [loop_a, loop_b]})
        assert s.enqueue_request(hop) is False
        assert s.flush_safely()
        counts = m.store.counts()
        assert (counts.queued, counts.failed) == (0, 1), counts
        assert [reason.split(":")[0] for _, reason in s.backend.failures()] == ["redirect_loop"]
        m.found.add(loop_b)
        m.failed.append(loop_b)
    finally:
        m.teardown()


class _Clock:
    """``time`` as upkeep.py and suspects.py see it, with a monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_node_trying_a_suspect_with_only_suspects_queued_does_not_read_past_them_at_every_ask(
        machine: type[SchedulerMachine], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page queued is a suspect: a fresh-only lease reads past all of them and finds nothing.
    The node does not read past them again at each engine ask and tick (the tick wakes a starved
    engine while anything is queued) until it queued a new page itself or a second has passed."""
    clock = _Clock()  # moved by the test only: the asks and ticks take no time
    monkeypatch.setattr(upkeep_module, "time", clock)
    monkeypatch.setattr(suspects_module, "time", clock)
    m = machine()
    try:
        _killed_holding(m, pages=12, handed=12)
        s = m.scheduler
        leases: list[tuple[bool, int]] = []  # (fresh only, how many) of each lease the store was asked for
        real_lease = s.backend.lease

        def lease(node: str, count: int, seconds: float, fresh_only: bool = False) -> list[Any]:
            leased = real_lease(node, count, seconds, fresh_only)
            leases.append((fresh_only, len(leased)))
            return leased
        s.backend.lease = lease  # type: ignore[method-assign]  # counted, the real store still answers
        while (request := s.next_request()) is not None:
            m.handed[request.meta[FRONTIER_ID]] = request.url
        for _ in range(10):
            s.upkeep.tick()
            assert s.next_request() is None
        assert leases == [(False, s.config.lease_batch), (True, 0)], leases
        clock.now += FRESH_RESCAN_SECONDS
        assert s.next_request() is None and leases[2:] == [(True, 0)], leases  # another node may have queued some
        s.enqueue_request(Request("https://fresh.test/new"))
        m.found.add("https://fresh.test/new")
        request = s.next_request()
        assert request is not None and request.url == "https://fresh.test/new", leases
        m.handed[request.meta[FRONTIER_ID]] = request.url
    finally:
        m.teardown()


@pytest.mark.parametrize("machine", [SchedulerMachine, RedisSchedulerMachine], ids=["embedded", "redis"])
def test_a_node_trying_a_suspect_with_a_request_waiting_for_its_host_leases_fresh_pages_once_a_second(
        machine: type[SchedulerMachine], monkeypatch: pytest.MonkeyPatch) -> None:
    """While a suspect is tried and a fresh page waits in hand for its host (one request per host),
    the node looks for other work once a second (the extra lease); when that finds none, an ask in
    the second after does not use up the next extra lease for nothing: a page another node queues is
    handed out as soon as both allow it (review: it waited up to 2 s)."""
    clock = _Clock()
    monkeypatch.setattr(upkeep_module, "time", clock)
    monkeypatch.setattr(suspects_module, "time", clock)

    class OneAtATimePerHost(machine):  # type: ignore[valid-type, misc]
        def store_settings(self) -> dict[str, Any]:
            return {**super().store_settings(), "RECORDHOUND_POLITENESS_CONCURRENCY": 1}

    m = OneAtATimePerHost()
    try:
        _killed_holding(m, pages=12, handed=12)
        s = m.scheduler
        real_lease = s.backend.lease

        def lease(node: str, count: int, seconds: float, fresh_only: bool = False) -> list[Any]:
            clock.now += 0.01  # a lease takes a moment (the rescan is counted from its end)
            return real_lease(node, count, seconds, fresh_only)
        s.backend.lease = lease  # type: ignore[method-assign]  # the real store answers
        while (request := s.next_request()) is not None:
            m.handed[request.meta[FRONTIER_ID]] = request.url  # a suspect tried
        for url in ("https://busy.test/a", "https://busy.test/b"):
            s.enqueue_request(Request(url))
            m.found.add(url)
        while (request := s.next_request()) is not None:
            m.handed[request.meta[FRONTIER_ID]] = request.url  # busy.test/a; busy.test/b waits for its host
        assert sorted(m.handed.values())[0] == "https://busy.test/a" and len(s.book.in_hand) - len(s.book.suspects) == 1
        clock.now += FRESH_RESCAN_SECONDS
        assert s.next_request() is None  # the extra lease: nothing fresh
        clock.now += EXTRA_LEASE_SECONDS - 0.005  # the next extra lease may run; the rescan after a short one not yet
        assert s.next_request() is None
        other = make_backend(s.config, PauseSpider.name, timeout=5.0)
        other.open()
        other.commit([Entry(None, 0, serialize.dumps(Request("https://other.test/new"), m.crawler.spider))], [], [])
        other.close()
        m.found.add("https://other.test/new")
        clock.now += 0.02  # both allow a lease now
        request = s.next_request()
        assert request is not None and request.url == "https://other.test/new"
        m.handed[request.meta[FRONTIER_ID]] = request.url
    finally:
        m.teardown()


def test_a_frontier_outage_while_a_suspects_outcome_is_decided_keeps_its_try_until_the_outcome_is_written() -> None:
    """Redis is cut (through a proxy) as the outcome of the suspect tried is decided: the write that
    ends the try fails, so the try stays open (a death now may still be the page's: its outcome is
    not in the store) and no other suspect is handed out; when Redis is back, the tick writes the
    outcome, the try ends, and the next suspect is handed out. The page is done, charged nothing."""
    real = redis_url()
    with FaultProxy(int(real.rsplit(":", 1)[1].split("/")[0])) as proxy:
        proxied = proxy.url(db=int(real.rsplit("/", 1)[1] or 0))

        class ProxiedMachine(RedisSchedulerMachine):
            def store_settings(self) -> dict[str, Any]:
                return {**super().store_settings(), "RECORDHOUND_REDIS_URL": proxied}

        m = ProxiedMachine()
        try:
            _killed_holding(m, pages=9, handed=3)
            s = m.scheduler
            while (request := s.next_request()) is not None:
                m.handed[request.meta[FRONTIER_ID]] = request.url
            (tried_id,) = [i for i in m.handed if m.store.states()[i].lost >= 1]
            proxy.cut(2.0)
            s.outcomes.response_received(tried_id)
            s.outcomes.output_finished(tried_id)  # decided: written at once, or so it is tried
            m.done.append(m.handed.pop(tried_id))
            assert s.outage.down and s.suspects.trying is not None and s.buffer.leases(), \
                "the try ended though its outcome is not in the store"
            assert s.next_request() is None
            proxy.wait_healed()
            deadline = time.monotonic() + 30
            while s.outage.down and time.monotonic() < deadline:
                time.sleep(0.1)
                s.upkeep.tick()
            assert not s.outage.down and s.suspects.trying is None and not s.buffer.leases()
            states = m.store.states()
            assert tried_id not in states or states[tried_id].state not in (QUEUED, LEASED), states.get(tried_id)
            request = s.next_request()
            assert request is not None and states[request.meta[FRONTIER_ID]].lost == 1, "the next suspect"
            m.handed[request.meta[FRONTIER_ID]] = request.url
        finally:
            m.teardown()


class ClosingInAnOutageMachine(SchedulerMachine):
    """The same crawls, and a graceful stop that meets a frontier outage: begun before the close (the
    crawl paused on it, outcomes waiting in the buffer) or as the close writes. The close waits, trying
    again with the outage's backoff, while the store still holds the node's leases and registration;
    once the store is back it writes the outcomes, returns the unstarted leases (no attempt counted:
    the teardown's drained counts) and leaves; the next process takes the crawl on. Here the file's
    write lock is held by another connection (a "busy" store); RedisClosingInAnOutageMachine: a proxy
    cuts, stalls or blackholes Redis."""

    KINDS: tuple[str, ...] = ("busy",)
    RECHECKS = False  # the outages' machine: no products

    def store_settings(self) -> dict[str, Any]:
        return {**super().store_settings(), "RECORDHOUND_FRONTIER_CALL_TIMEOUT_SECONDS": 0.3,
                "RECORDHOUND_POLITENESS_CONCURRENCY": POLITE_CONCURRENCY}

    def slots_in_store(self, holder: str) -> int | None:
        """The politeness slots ``holder`` holds in the store (None: embedded, they live in the process,
        and returning one cannot fail)."""
        return None

    @invariant()
    def the_store_holds_one_slot_per_page_in_flight(self) -> None:
        """A slot is held from a page's hand-out to its end, no longer: a slot left behind keeps the
        host's other requests waiting (every node's) until it expires."""
        s = self.scheduler
        assert s.gate is not None
        held = self.slots_in_store(s.gate.holder)
        assert held is None or held == len(self.handed) + len(self.storing), (held, self.handed, self.storing)

    @precondition(lambda self: self.handed)
    @rule(data=st.data(), seconds=st.sampled_from([0.5, 1.0]))
    def pages_end_in_an_outage(self, data: st.DataObject, seconds: float) -> None:
        """Pages end while the store is out: their outcomes wait in the buffer and their slots cannot
        be returned. Once the store is back, the tick writes the outcomes and returns the slots."""
        s = self.scheduler
        self.start_outage(data.draw(st.sampled_from(self.KINDS), label="outage"), seconds)
        for frontier_id in data.draw(st.lists(st.sampled_from(sorted(self.handed)), min_size=1, unique=True),
                                     label="pages"):
            s.outcomes.response_received(frontier_id)
            s.outcomes.output_finished(frontier_id)
            self._acked(frontier_id, self.handed.pop(frontier_id))
        self.outage_over()
        s.upkeep.tick()
        self._tick_until_the_store_answers()
        assert not s.buffer.leases(), "the outcomes were not written once the store was back"

    def start_outage(self, kind: str, seconds: float) -> None:
        assert self.scheduler.backend is not None
        locker = sqlite3.connect(self.scheduler.backend.path, isolation_level=None, check_same_thread=False)
        locker.execute("BEGIN EXCLUSIVE")
        self.locked = threading.Event()
        self.locked.set()

        def unlock() -> None:
            locker.execute("ROLLBACK")
            locker.close()
            self.locked.clear()
        threading.Timer(seconds, unlock).start()

    def held_in_store(self, node: str) -> tuple[bool, int]:
        """(registered, leases held) as another process reads them now, during the outage: a read-only
        connection (the backend's own open would wait for the file's write lock, until the outage ends)."""
        assert self.scheduler.backend is not None
        reader = sqlite3.connect(f"file:{self.scheduler.backend.path}?mode=ro", uri=True)
        try:
            registered = reader.execute("SELECT count(*) FROM nodes WHERE node = ?", (node,)).fetchone()[0]
            leases = reader.execute("SELECT count(*) FROM queue WHERE owner = ?", (node,)).fetchone()[0]
        finally:
            reader.close()
        return bool(registered), leases

    def outage_over(self) -> None:
        deadline = time.monotonic() + 30
        while self.locked.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)

    @precondition(lambda self: self.restarts < 2)
    @rule(kind=st.sampled_from(["mid_crawl", "at_close"]), seconds=st.sampled_from([0.5, 1.0, 2.0]),
          killed=st.booleans(), data=st.data())
    def graceful_stop_in_an_outage(self, kind: str, seconds: float, killed: bool, data: st.DataObject) -> None:
        """The stop meets an outage; the close waits for the store, or the process is killed while it
        waits (kill -9: what it had not written is lost with it, and fetched again)."""
        s = self.scheduler
        killed = killed and self.kills < 2
        if killed:  # what the model cannot tell apart is written first: the outcomes and the requests found so
            assert s.flush_safely()  # far (a kill loses them, and nothing here finds them again)
        outage = data.draw(st.sampled_from(self.KINDS), label="outage")
        self.start_outage(outage, seconds)
        if kind == "mid_crawl":
            s.upkeep.tick()  # the store is found down: the crawl pauses, outcomes from here on wait in the buffer
        finishing = {**self.handed, **self.storing}
        self._finish_in_flight()
        node, token, holding = s.node, s.token, len(s.book) + len(s.buffer.leases())
        assert s.gate is not None
        holder = s.gate.holder
        closing = s.close("shutdown")  # None: the store answered before the outage was felt
        if closing is not None:
            ended: list[Any] = []
            closing.addBoth(ended.append)
            assert self.held_in_store(node) == (True, holding), "a waiting close left the crawl or lost its leases"
            if killed:
                self._killed_while_closing(node, token, finishing)
                return
            deadline = time.monotonic() + 30
            while not ended and time.monotonic() < deadline:
                time.sleep(closing_module.WAIT_SECONDS)
                self.clock.advance(closing_module.WAIT_SECONDS)
            assert ended == [None], f"the close did not end once the store was back: {ended}"
        assert not s.outage.down
        with self.seen_store() as seen:
            assert node not in seen.nodes() and not seen.counts().leased.get(node), "the node stayed in the crawl"
        assert self.slots_in_store(holder) in (None, 0), "the node left politeness slots behind"
        self.restarts += 1
        self.scheduler = self._open()
        self.given_back_on_tick = False

    def _killed_while_closing(self, node: str, token: str, finishing: dict[int, str]) -> None:
        """The process dies in the close's wait; it comes back under the same node id once the store is
        back. A page whose outcome the store never took is fetched again (a stalled write may have
        landed after its caller gave up on it: the store says which)."""
        self.outage_over()
        self.kills += 1
        with self.seen_store() as seen:
            seen.leave(node, token)  # its registration is gone (a dead pid): the id is free again
            states = seen.states()
        for frontier_id, url in finishing.items():
            if frontier_id in states and states[frontier_id].state in (QUEUED, LEASED):
                self.done.remove(url)  # its ack died with the process
        assert self.scheduler.backend is not None
        self.scheduler.backend.close()
        self.scheduler = self._open()
        self.given_back_on_tick = False

    @contextlib.contextmanager
    def seen_store(self) -> Iterator[FrontierBackend]:
        """The store as another process reads it (not through the outage)."""
        seen = self.direct_store()
        seen.open()
        try:
            yield seen
        finally:
            seen.close()


class RedisClosingInAnOutageMachine(ClosingInAnOutageMachine, RedisSchedulerMachine):
    KINDS = ("cut", "stall", "blackhole")

    def __init__(self) -> None:
        real = redis_url()
        self.real_url = real
        self.proxy = FaultProxy(int(real.rsplit(":", 1)[1].split("/")[0])).__enter__()
        self.proxied = self.proxy.url(db=int(real.rsplit("/", 1)[1] or 0))
        try:
            super().__init__()
        except BaseException:
            self.proxy.__exit__(None, None, None)
            raise

    def store_settings(self) -> dict[str, Any]:
        return {**super().store_settings(), "RECORDHOUND_REDIS_URL": self.proxied}

    def start_outage(self, kind: str, seconds: float) -> None:
        getattr(self.proxy, kind)(seconds)

    def outage_over(self) -> None:
        self.proxy.wait_healed()

    def slots_in_store(self, holder: str) -> int | None:
        assert self.scheduler.gate is not None
        direct = redis.Redis.from_url(self.real_url)  # not through the proxy
        try:
            keys = direct.keys(f"{self.scheduler.config.redis_prefix}:hosts:*:slots")
            return sum(1 for key in keys for slot in direct.zrange(key, 0, -1)
                       if holder_of(slot.decode()) == holder)
        finally:
            direct.close()

    def held_in_store(self, node: str) -> tuple[bool, int]:
        with self.seen_store() as seen:  # Redis itself, not through the proxy
            return node in seen.nodes(), seen.counts().leased.get(node, 0)

    def direct_store(self) -> FrontierBackend:
        return make_backend(replace(self.scheduler.config, redis_url=self.real_url), PauseSpider.name, timeout=5.0)

    def teardown(self) -> None:
        try:
            self.proxy.wait_healed()
            super().teardown()
        finally:
            self.proxy.__exit__(None, None, None)


@pytest.mark.parametrize("machine", [ClosingInAnOutageMachine, RedisClosingInAnOutageMachine],
                         ids=["embedded", "redis"])
def test_a_graceful_stop_in_a_frontier_outage_waits_for_the_store_and_loses_no_request_or_slot(
        machine: type[SchedulerMachine], monkeypatch: pytest.MonkeyPatch) -> None:
    # a full host is asked again at every ask (not 50 ms later): what the engine is handed must not
    # depend on the wall clock, which Hypothesis cannot replay
    monkeypatch.setattr(hostgate_module, "SLOT_WAIT_SECONDS", 0.0)
    run_state_machine_as_test(machine, settings=settings(
        max_examples=25, stateful_step_count=30, deadline=None, database=None))


MAX_EXAMPLES = {SchedulerMachine: 60, RedisSchedulerMachine: 30, RecrawlMachine: 40, RedisRecrawlMachine: 20}
