"""Stateful property tests of requests sent again on purpose (salted), on both real backends.

A sitemap read again fetches once more the products whose ``lastmod`` moved: such a request carries a
fingerprint salt (``FINGERPRINT_SALT_META``, "<sitemap url> <read number>"), so it passes the dupefilter
although its URL was seen, is queued once per read even when the read is expanded again after a kill,
and is never rechecked on its own schedule (its kind, ``MOVED_KIND``, has none). The machines of
test_scheduler_stateful.py run here with more rules: a URL already found (queued, leased, done, on its
recheck schedule or a dead letter) is found again with the salt of a read, a new one or one seen before;
the salted request is leased, answered (maybe an item to store), fails for good or transiently, redirects
(Scrapy copies its meta: the salt too), has its lease taken back, lives through stops and kills.

The model keys a salted entry by (URL, salt): one not seen is queued exactly once, the same again is
filtered; its outcome (done or a dead letter) is its own, never its URL's; it is never scheduled. After
every step the store holds no salted entry scheduled, and the first entry handed out for a (URL, salt)
is the only one ever handed out for it. At the end every (URL, salt) found has exactly one outcome,
beside every plain URL's; the store's done, failed and scheduled counts are the model's, and its seen-set
holds one fingerprint per plain URL and per (URL, salt) found. The recheck stats and each product's
validators and schedule are checked as in test_scheduler_stateful.py: a salted fetch changes none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule, run_state_machine_as_test
from scrapy import Request
from scrapy.http import HtmlResponse

from recordhound.frontier.backend import SCHEDULED
from recordhound.frontier.dupefilter import FINGERPRINT_SALT_META
from recordhound.frontier.registry import FRONTIER_ID, KIND_META, PARENT_ID
from recordhound.spiders.catalog import MOVED_KIND
from tests.integration.test_scheduler_stateful import (LATER, MAX_STEPS, MOVED, OFFSITE, PRODUCTS, SELF,
                                                       RecrawlMachine, RedisSchedulerMachine, SchedulerMachine, _body)

SITEMAP = "https://shop.test/sitemap-products.xml"  # the salt: "<sitemap url> <read number>"


def _key(url: str, salt: str) -> str:
    """How the model names a salted entry (in ``found``, ``handed``, ``done``...): never a URL."""
    return f"{url} @ {salt}"


@dataclass
class Salted:
    """What the store must hold of one (URL, salt): a fetch of its own, with no schedule."""

    url: str
    salt: str
    chain: list[str] = field(default_factory=list)  # the redirect chain it was queued with
    status: str = "to_fetch"  # to_fetch (queued or waiting a retry) | leased | done | failed
    frontier_id: int | None = None  # its entry, once handed out: the only one it ever has


class SaltedMachine(SchedulerMachine):
    """SchedulerMachine with a sitemap that moves: URLs found before are found again with a salt."""

    def __init__(self) -> None:
        self.salted: dict[str, Salted] = {}  # key -> the model of a salted entry
        self.salted_of: dict[int, str] = {}  # frontier id -> key, for the salted entries handed out
        self.reads = 0  # the sitemap's reads so far (a read's number makes its salt)
        super().__init__()

    # ---- the model ----------------------------------------------------------------------------
    def _plain_found(self) -> list[str]:
        return sorted(url for url in self.found if url not in self.salted)

    def _salted_in_flight(self) -> list[int]:
        return [i for i in sorted(self.handed) if self.handed[i] in self.salted]

    def _in_flight(self, products: bool | None = None, rechecks: bool = False) -> list[int]:
        """Plain pages only for the rules that redirect them (a salted page has rules of its own)."""
        ids = super()._in_flight(products, rechecks)
        return [i for i in ids if self.handed[i] not in self.salted] if products is False else ids

    def _found_salted(self, url: str, salt: str, chain: list[str]) -> None:
        key = _key(url, salt)
        if key not in self.found:  # else filtered: the same read expanded again, or a redirect to it
            self.found.add(key)
            self.salted[key] = Salted(url, salt, chain)

    def _handed_out(self, request: Request) -> None:
        """A salted request is fetched only while it is to be fetched, always as the same entry, with no
        validators (no state: it is no recheck) and the chain it was queued with; the rest as before."""
        if (salt := request.meta.get(FINGERPRINT_SALT_META)) is None:
            super()._handed_out(request)
            return
        frontier_id, key = request.meta[FRONTIER_ID], _key(request.url, salt)
        self.requests[frontier_id] = request
        entry = self.salted.get(key)
        assert entry is not None, f"{key} handed out but never found"
        assert entry.status == "to_fetch", f"{key} handed out while {entry.status}"
        assert entry.frontier_id in (None, frontier_id), \
            f"{key} queued twice: entries {entry.frontier_id} and {frontier_id}"
        assert self.salted_of.get(frontier_id, key) == key, (frontier_id, self.salted_of[frontier_id], key)
        assert request.meta.get(KIND_META) == MOVED_KIND, request.meta
        assert not any(request.headers.get(name) for name in ("If-None-Match", "If-Modified-Since")), request.headers
        assert request.meta.get("redirect_urls", []) == entry.chain, (key, request.meta.get("redirect_urls"), entry)
        entry.frontier_id, entry.status = frontier_id, "leased"
        self.salted_of[frontier_id] = key

    def _acked(self, frontier_id: int, url: str) -> None:
        key = self.salted_of.get(frontier_id, url)
        if (entry := self.salted.get(key)) is not None:
            entry.status = "done"  # no schedule: its kind has none, whatever its URL's kind
        super()._acked(frontier_id, key)

    def _dead(self, frontier_id: int, url: str) -> None:
        key = self.salted_of.get(frontier_id, url)
        if (entry := self.salted.get(key)) is not None:
            entry.status = "failed"
        super()._dead(frontier_id, key)

    def _back_in_queue(self, frontier_id: int, url: str) -> None:
        key = self.salted_of.get(frontier_id, url)
        if (entry := self.salted.get(key)) is not None:
            entry.status = "to_fetch"
        super()._back_in_queue(frontier_id, key)

    def _engine_schedules(self, redirect: Request) -> None:
        """A redirect of a salted page (also one whose lease the store took back, made by the plain rule
        from the model's key): Scrapy's RedirectMiddleware copies its meta, the salt and kind too."""
        key = self.salted_of.get(redirect.meta.get(FRONTIER_ID, -1))
        if key is not None and FINGERPRINT_SALT_META not in redirect.meta:
            entry = self.salted[key]
            chain = [entry.url if url == key else url for url in redirect.meta.get("redirect_urls", [])]
            redirect = redirect.replace(meta={**redirect.meta, KIND_META: MOVED_KIND, FINGERPRINT_SALT_META: entry.salt,
                                              "redirect_urls": chain, "redirect_times": len(chain)})
        super()._engine_schedules(redirect)

    # ---- rules --------------------------------------------------------------------------------
    def _model_key(self, request: Request) -> str:
        """A salted request is named by its (URL, salt)."""
        salt = request.meta.get(FINGERPRINT_SALT_META)
        return request.url if salt is None else _key(request.url, salt)

    @precondition(lambda self: self._plain_found())
    @rule(data=st.data(), again=st.booleans())
    def sitemap_lastmods_moved(self, data: st.DataObject, again: bool) -> None:
        """The sitemap is read (a new read), or a read is expanded again (after a kill its ack was lost):
        each URL whose lastmod moved is queued with the read's salt, whatever became of it before."""
        self._enqueue_moved(*self._moved(data, again))

    def _enqueue_moved(self, salt: str, urls: list[str]) -> None:
        for url in urls:
            self.scheduler.enqueue_request(Request(url, meta={KIND_META: MOVED_KIND, FINGERPRINT_SALT_META: salt},
                                                   priority=1))
            self._found_salted(url, salt, [])

    @precondition(lambda self: self._in_flight(products=False))
    @rule(data=st.data(), again=st.booleans(), killed=st.booleans())
    def sitemap_page_yields_moved_products(self, data: st.DataObject, again: bool, killed: bool) -> None:
        """The same, as the catalog spider does it: a page in flight (the sitemap) yields the salted
        requests as its children (the frontier middleware counts them in: it is acked after them). Or the
        process is killed once they are written, before the page's output ends: the page is fetched again
        (and its read, not acked, expanded again: the same salt, as ``again`` draws it)."""
        frontier_id = data.draw(st.sampled_from(self._in_flight(products=False)), label="sitemap")
        salt, picked = self._moved(data, again)
        s = self.scheduler
        s.outcomes.response_received(frontier_id)
        for moved in picked:
            s.outcomes.child_yielded(frontier_id)
            s.enqueue_request(Request(moved, meta={KIND_META: MOVED_KIND, FINGERPRINT_SALT_META: salt,
                                                   PARENT_ID: frontier_id}, priority=1))
            self._found_salted(moved, salt, [])
        if killed and self.kills < 2:
            self.killed_after_a_write_and_restarted()  # the children are written, the page is not acked
            return
        s.outcomes.output_finished(frontier_id)
        self._acked(frontier_id, self.handed.pop(frontier_id))

    def _moved(self, data: st.DataObject, again: bool) -> tuple[str, list[str]]:
        """A read's salt (a new read, or one before it expanded again) and the URLs whose lastmod moved."""
        if not again or not self.reads:
            self.reads += 1
        read = data.draw(st.integers(1, self.reads), label="read") if again else self.reads
        return f"{SITEMAP} {read}", data.draw(st.lists(st.sampled_from(self._plain_found()), min_size=1, max_size=3),
                                              label="moved")

    @precondition(lambda self: self._salted_in_flight())
    @rule(data=st.data(), item=st.booleans())
    def salted_page_answered(self, data: st.DataObject, item: bool) -> None:
        """A salted fetch is answered 200 (its item, maybe, waits for the product store): done, with no
        schedule, no recheck counted, nothing changed in its URL's own state."""
        self._answer_salted(data.draw(st.sampled_from(self._salted_in_flight()), label="page"), item)

    def _answer_salted(self, frontier_id: int, item: bool) -> None:
        key, request, s = self.handed.pop(frontier_id), self.requests[frontier_id], self.scheduler
        product = self.products.get(request.url)
        response = HtmlResponse(request.url, body=_body(request.url, product.version if product else 0),
                                headers={"ETag": '"moved"'}, request=request)
        s.engine_signals._response_received(response, request)
        if item:
            s.outcomes.item_yielded(frontier_id)
            s.outcomes.output_finished(frontier_id)
            self.storing[frontier_id] = key
        else:
            s.outcomes.output_finished(frontier_id)
            self._acked(frontier_id, key)

    @precondition(lambda self: self._salted_in_flight())
    @rule(data=st.data(), to=st.sampled_from([SELF, *MOVED, PRODUCTS[0]]))
    def salted_page_redirects(self, data: st.DataObject, to: str) -> None:
        """Scrapy's RedirectMiddleware queues the new URL with the page's meta (its salt and kind): a hop
        back into its chain is a loop, off-site is dropped (dead letters); else the page is done and
        (new URL, salt) queued unless seen."""
        frontier_id = data.draw(st.sampled_from(self._salted_in_flight()), label="page")
        key, request = self.handed.pop(frontier_id), self.requests[frontier_id]
        entry = self.salted[key]
        to = entry.url if to == SELF else to
        chain = [*request.meta.get("redirect_urls", []), entry.url]
        if to == OFFSITE or to in chain:
            self._dead(frontier_id, key)
        else:
            self._acked(frontier_id, key)
            self._found_salted(to, entry.salt, chain)
        self._engine_schedules(request.replace(url=to, meta={**request.meta, "redirect_urls": chain,
                                                             "redirect_times": len(chain)}))

    # ---- invariants and the end -----------------------------------------------------------------
    @invariant()
    def no_salted_entry_is_scheduled(self) -> None:
        assert self.scheduler.backend is not None
        states = self.scheduler.backend.states()
        scheduled = [key for key, entry in self.salted.items()
                     if entry.frontier_id is not None and (state := states.get(entry.frontier_id)) is not None
                     and state.state == SCHEDULED]
        assert not scheduled, f"salted entries on a recheck schedule: {scheduled}"

    def _drain(self) -> None:
        """SchedulerMachine's drain says every key found (plain or salted) has one outcome and the store's
        counts are the model's; here also: every salted entry is done or a dead letter, never kept, and the
        store's seen-set holds one fingerprint per key found (a (URL, salt) filtered once seen, and only then)."""
        super()._drain()
        assert {entry.status for entry in self.salted.values()} <= {"done", "failed"}, self.salted
        assert self.scheduler.backend is not None
        assert self.scheduler.backend.counts().seen == len(self.found), (self.scheduler.backend.counts(), self.found)


class RedisSaltedMachine(SaltedMachine, RedisSchedulerMachine):
    pass


class SaltedRecrawlMachine(SaltedMachine, RecrawlMachine):
    """On a crawl of products (RecrawlMachine): the salted fetches among rechecks coming due."""


class RedisSaltedRecrawlMachine(SaltedRecrawlMachine, RedisSchedulerMachine):
    pass


# as test_scheduler_stateful.py's machines
MAX_EXAMPLES = {SaltedMachine: 60, RedisSaltedMachine: 30, SaltedRecrawlMachine: 40, RedisSaltedRecrawlMachine: 20}


@pytest.mark.parametrize("machine", [SaltedMachine, RedisSaltedMachine], ids=["embedded", "redis"])
def test_random_salted_sequences_queue_each_url_once_per_salt_with_an_outcome_of_its_own(
        machine: type[SaltedMachine]) -> None:
    run_state_machine_as_test(machine, settings=settings(
        max_examples=MAX_EXAMPLES[machine], stateful_step_count=MAX_STEPS, deadline=None, database=None))


@pytest.mark.parametrize("machine", [SaltedRecrawlMachine, RedisSaltedRecrawlMachine], ids=["embedded", "redis"])
def test_random_salted_sequences_among_rechecks_leave_each_products_schedule_as_it_was(
        machine: type[SaltedMachine]) -> None:
    run_state_machine_as_test(machine, settings=settings(
        max_examples=MAX_EXAMPLES[machine], stateful_step_count=MAX_STEPS, deadline=None, database=None))


@pytest.mark.parametrize("machine", [SaltedMachine, RedisSaltedMachine], ids=["embedded", "redis"])
def test_a_product_whose_lastmod_moved_is_fetched_once_per_read_beside_its_own_schedule(
        machine: type[SaltedMachine]) -> None:
    """A product fetched and kept on its schedule (an hour out) moves in read 1 of the sitemap: read 1
    expanded again (before and after a restart) queues nothing more, read 2 queues it once more. Each
    salted fetch is done on its own; the product stays scheduled, its recheck stats untouched."""
    m = machine()
    try:
        s, product = m.scheduler, PRODUCTS[1]
        assert s.claim_start() == "claimed"
        m._schedule(LATER)
        m._enqueue_products([product])
        s.start_finished()
        m.engine_asks()
        (frontier_id,) = m.handed
        m._answer(frontier_id, "same")  # its first fetch: scheduled an hour out
        read_1, read_2 = f"{SITEMAP} 1", f"{SITEMAP} 2"
        m._enqueue_moved(read_1, [product])
        m._enqueue_moved(read_1, [product])
        m.graceful_stop_and_restart()
        m._enqueue_moved(read_1, [product])
        m._enqueue_moved(read_2, [product])
        fetched = []
        for _ in range(4):
            m.engine_asks()
            for frontier_id in sorted(m.handed):
                fetched.append(m.handed[frontier_id])
                m._answer_salted(frontier_id, item=False)
        assert fetched == [_key(product, read_1), _key(product, read_2)], fetched
        m.flush()  # the store's dead letters and schedules are the model's
        assert m.scheduler.backend is not None and m.scheduler.backend.counts().scheduled == 1
        assert m.products[product].status == "later" and not +m.expected  # no recheck since the restart
        m.the_recheck_stats_count_what_the_model_says()
        m.no_salted_entry_is_scheduled()
    finally:
        m.teardown()
