"""Stateful property tests of the store's calls to its writer process, on SQLite and PostgreSQL.

Hypothesis drives random sequences of what a crawl asks of its product store: items stored (a few
releases whose offers change price), the crawl's progress published, the writer process killed
while idle or at a random moment of a write (before its commit, or after it and before its reply),
and a crawl ending (its writer killed meanwhile, perhaps) and the next one opening (its writer killed
while it starts or opens the source, perhaps). The writer is the real spawned process, the databases
real. After every step the product DB holds exactly the last price stored of each offer, and each
offer's price history holds exactly its price changes (a batch written again after a lost reply
changes nothing). At the end of each crawl its source is "completed" and every crawl opened has
one opening sample and one end sample, never two (a call tried again after its commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import shutil
import signal
import tempfile
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from recordhound.config import ReviewConfig, StoreConfig
from recordhound.items import Offer, Release
from recordhound.pipelines import store as store_module
from recordhound.pipelines.store import StorePipeline
from recordhound.sources import load_profile
from tests.integration.dbcheck import ProductDb
from tests.services import PostgresDatabase

RELEASES = 3  # few: the same offers change again and again
PRICES = st.sampled_from(["10.00", "10.50", "11.00", "12.00"])  # within no review threshold (set off below)


def _release(n: int, price: str) -> Release:
    url = f"http://shop/release/{n}"
    return Release("demo", url, f"DR-{n}", f"Title {n}", [f"Artist {n}"], "Fold Records", f"FLD-{n:03d}", 2001,
                   ["House"], offers=[Offer(f"DR-{n}", url, "LP", "new", price=Decimal(price), currency="EUR")])


def _kill_the_writer() -> None:
    """SIGKILL this process's writer (its only children: the store's pool)."""
    for process in multiprocessing.active_children():
        if process.is_alive() and process.pid is not None:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile (reaped by the pool)
                os.kill(process.pid, signal.SIGKILL)


class StoreMachine(RuleBasedStateMachine):
    """Each example on a product DB of its own: a SQLite file (PostgresMachine: a PostgreSQL database)."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="rh-store-stateful-")
        self.database_url = self._database()
        self.loop = asyncio.new_event_loop()
        self.prices: dict[int, list[str]] = {}  # release → every price stored, in order
        self.crawls = self.progress = 0
        self.ended = False  # the store of the last crawl opened is closed (teardown does not close it again)
        self.store = self._open()

    def _database(self) -> str:
        return f"sqlite:///{self.folder}/product.sqlite3"

    def _open(self, kill_after_ms: int | None = None) -> StorePipeline:
        """A crawl opens its store; ``kill_after_ms``: its writer killed that soon after (starting, or
        opening the source: the opening is tried again)."""
        values = {"RECORDHOUND_DATABASE_URL": self.database_url, "RECORDHOUND_TRUST_NEW_ENTITIES": True,
                  "RECORDHOUND_REVIEW_PATH": f"{self.folder}/review.sqlite3",
                  "RECORDHOUND_PRICE_REVIEW_THRESHOLD": 1000.0, "RECORDHOUND_STORE_FLUSH_SECONDS": 0.05}
        project = Settings()
        project.setmodule("recordhound.settings")
        project.setdict(values)
        crawler = get_crawler(settings_dict=values)
        crawler.engine = SimpleNamespace(paused=False, pause=lambda: None,  # type: ignore[assignment]
                                         unpause=lambda: None)
        crawler.spider = SimpleNamespace(profile=load_profile("demo"))  # type: ignore[assignment]
        store = StorePipeline(crawler, StoreConfig.from_settings(project), ReviewConfig.from_settings(project))
        self.loop.run_until_complete(store.open_spider())
        if kill_after_ms is not None:
            self.loop.run_until_complete(asyncio.sleep(kill_after_ms / 1000))
            _kill_the_writer()
        assert store._opening is not None
        self._run(asyncio.shield(store._opening))  # the schema and the source there before any check
        self.crawls += 1
        return store

    def _run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, 120))

    async def _store(self, n: int, price: str) -> None:
        await self.store.process_item(_release(n, price))

    @rule(n=st.integers(0, RELEASES - 1), price=PRICES)
    def store_an_item(self, n: int, price: str) -> None:
        self._run(self._store(n, price))
        self.prices.setdefault(n, []).append(price)

    @rule()
    def kill_the_idle_writer(self) -> None:
        _kill_the_writer()

    @rule(n=st.integers(0, RELEASES - 1), price=PRICES, after_ms=st.integers(0, 60))
    def kill_the_writer_while_it_writes(self, n: int, price: str, after_ms: int) -> None:
        """Killed before the batch's commit, or after it before its reply: written once either way."""
        async def write_and_kill() -> None:
            writing = asyncio.ensure_future(self._store(n, price))
            await asyncio.sleep(after_ms / 1000)
            _kill_the_writer()
            await writing
        self._run(write_and_kill())
        self.prices.setdefault(n, []).append(price)

    @precondition(lambda self: self.store.counts["items"] > 0)  # told from the opening sample by its items
    @rule(kill_after_ms=st.none() | st.integers(0, 40))
    def publish_progress(self, kill_after_ms: int | None) -> None:
        """The progress sample is not retried: a writer killed meanwhile may leave it out."""
        async def publish() -> None:
            self.store._publish_progress(self.loop.time() + 1000)
            if kill_after_ms is not None:
                await asyncio.sleep(kill_after_ms / 1000)
                _kill_the_writer()
            await asyncio.sleep(0.3)
        self._run(publish())
        self.progress += 1

    @rule(kill_after_ms=st.none() | st.integers(0, 40), kill_opening_after_ms=st.none() | st.integers(0, 1500))
    def end_the_crawl_and_start_the_next(self, kill_after_ms: int | None, kill_opening_after_ms: int | None) -> None:
        """The crawl's end is tried again when the writer died meanwhile; the next crawl opens (its
        writer killed while it starts or opens the source, perhaps)."""
        async def end() -> None:
            await self.store.close_spider()
            ending = asyncio.ensure_future(self.store._spider_closed("finished"))
            if kill_after_ms is not None:
                await asyncio.sleep(kill_after_ms / 1000)
                _kill_the_writer()
            await ending
        self.ended = True
        self._run(end())
        self._check_the_ends(open_crawl=False)
        self.store = self._open(kill_opening_after_ms)
        self.ended = False

    @invariant()
    def the_product_db_holds_the_last_prices_and_each_change_once(self) -> None:
        db = ProductDb(self.database_url)
        try:
            stored = {r.external_id: f"{r.price:.2f}" for r in db.rows("SELECT external_id, price FROM offers")}
            history = {r.external_id: int(r.changes) for r in db.rows(
                "SELECT o.external_id, count(h.id) AS changes FROM offers o "
                "LEFT JOIN offer_history h ON h.offer_id = o.id GROUP BY o.external_id")}
        finally:
            db.close()
        assert stored == {f"DR-{n}": prices[-1] for n, prices in self.prices.items()}
        assert history == {f"DR-{n}": _changes(prices) for n, prices in self.prices.items()}

    def _check_the_ends(self, open_crawl: bool) -> None:
        db = ProductDb(self.database_url)
        try:
            samples = [(bool(r.finished), int(r.items)) for r in db.rows(
                "SELECT finished, items FROM crawl_samples ORDER BY id")]
            status = db.source_meta()["status"]
        finally:
            db.close()
        ended = self.crawls - (1 if open_crawl else 0)
        assert [finished for finished, _ in samples].count(True) == ended, samples
        assert samples.count((False, 0)) == self.crawls, samples  # one opening sample per crawl, never two
        assert len(samples) - ended - self.crawls <= self.progress, samples
        assert status == ("in_progress" if open_crawl else "completed")

    def teardown(self) -> None:
        try:
            if not self.ended:
                self._run(self.store.close_spider())
                self._run(self.store._spider_closed("finished"))
                self._check_the_ends(open_crawl=False)
        finally:
            self.loop.close()
            shutil.rmtree(self.folder, ignore_errors=True)


class PostgresMachine(StoreMachine):
    def _database(self) -> str:
        self.postgres = PostgresDatabase().__enter__()
        return self.postgres.url

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.postgres.__exit__(None, None, None)


def _changes(prices: list[str]) -> int:
    """History rows of an offer stored with these prices in turn: one per change of price."""
    return sum(1 for before, after in zip(prices, prices[1:]) if after != before)


@pytest.mark.parametrize("machine", [StoreMachine, PostgresMachine], ids=["sqlite", "postgresql"])
def test_the_store_s_calls_survive_any_sequence_of_writer_deaths(machine: type[StoreMachine],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "PROGRESS_EVERY_SECONDS", 1e9)  # progress published by the rule alone
    run_state_machine_as_test(machine, settings=settings(
        max_examples=int(os.environ.get("RH_EXAMPLES", "6")), stateful_step_count=10, deadline=None, database=None))
