"""The store's writer process does not run the crawler's ``__main__``.

multiprocessing's spawn imports the parent's main module in the child. For ``scrapy crawl`` run
through the ``scrapy`` console script that is the script, so the writer imported Scrapy and
Twisted (lxml, zope.interface ...) before its first batch; for a launcher script without a
``__main__`` guard (``execute(["scrapy", "crawl", ...])`` at the top of a ``run.py``, as IDE users
write it) the writer ran a second crawl of its own and never wrote a batch. The writer's code and
arguments all live in recordhound's modules, so it is spawned without the crawler's main. Real
crawls of the demo shop, SQLite and PostgreSQL, compared with the shop's truth."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from recordhound.db.engine import make_engine
from recordhound.demo.process import ShopProcess
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue
from tests.integration.crawlers import CrawlSetup, Crawler
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import (_compared, assert_crawl_matches_truth, assert_frontier_clean,
                                          assert_ids_consecutive, expected_offer, stored_offers)

SLOW_STORE = "RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS=0.1"  # the writer lives while the test looks at it
UNGUARDED_LAUNCHER = '''import sys

from scrapy.cmdline import execute

execute(["scrapy", *sys.argv[1:]])
'''
# a guarded launcher whose pipeline gives one release a price of a Decimal subclass it defines
POISONING_LAUNCHER = '''import json
import sys
from decimal import Decimal

from scrapy.cmdline import execute

from recordhound import settings


class Money(Decimal):
    pass


class Poison:
    def process_item(self, item):
        if "/release/000003-" in getattr(item, "url", "") and getattr(item, "price", None) is not None:
            item.price = Money(item.price)
        return item


if __name__ == "__main__":
    pipelines = {**settings.ITEM_PIPELINES, "__main__.Poison": 300}
    execute(["scrapy", *sys.argv[1:], "-s", "ITEM_PIPELINES=" + json.dumps(pipelines)])
'''
# a guarded launcher whose pipeline gives one release a price that ends the process reading it (exit code 70)
KILLING_LAUNCHER = POISONING_LAUNCHER.replace("""class Money(Decimal):
    pass
""", """class Money(Decimal):
    def __reduce__(self):
        import os
        return (os._exit, (70,))
""")
# a guarded launcher with a pipeline of its own that hands the store its own Release (and Offer) subclasses
SUBCLASSING_LAUNCHER = '''import json
import sys
from dataclasses import fields

from scrapy.cmdline import execute

from recordhound import settings
from recordhound.items import Offer, Release


class ShopOffer(Offer):
    pass


class ShopRelease(Release):
    pass


class Mark:
    def process_item(self, item):
        if type(item) is not Release:
            return item
        values = {f.name: getattr(item, f.name) for f in fields(Release)}
        values["offers"] = [ShopOffer(**{f.name: getattr(o, f.name) for f in fields(Offer)}) for o in item.offers]
        return ShopRelease(**values)


if __name__ == "__main__":
    pipelines = {**settings.ITEM_PIPELINES, "__main__.Mark": 300}
    execute(["scrapy", *sys.argv[1:], "-s", "ITEM_PIPELINES=" + json.dumps(pipelines)])
'''


def _writer(node: Crawler) -> int | None:
    """The crawler's spawned writer process (not multiprocessing's resource tracker)."""
    for pid in node.children():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"spawn_main" in part for part in command):
            return pid
    return None


def _offers(database_url: str) -> int:
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM offers")).scalar_one())
    except Exception:  # noqa: BLE001 - the writer has not created its tables yet
        return 0
    finally:
        engine.dispose()


def _stop_tree(node: Crawler) -> None:
    """SIGKILL the crawler and whatever it spawned (a writer that ran a crawl of its own has children too)."""
    pending = [node.process.pid]
    while pending:
        pid = pending.pop()
        pending += [int(kid) for kid in _kids(pid)]
        if pid != node.process.pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    node.ensure_stopped()


def _kids(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def _launched_crawl(tmp_path: Path, database_url: str, launcher: str, seed: int,
                    crash_at: str = "", writer_dies: bool = False) -> tuple[CrawlSetup, dict[str, Any], str]:
    """Crawl a 40-release demo shop with ``python run.py crawl catalog ...`` (``launcher`` its text):
    it ends on its own, exit 0, no writer died and nothing raised. ``crash_at``: a crash point the
    crawl is killed at first (SIGKILL, the whole node), then resumed. Returns the setup, the shop's
    truth and the (resumed) crawl's log."""
    path = tmp_path / "run.py"
    path.write_text(launcher)
    program = (sys.executable, str(path))
    with ShopProcess(40, seed=seed) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        if crash_at:
            # one batch for the whole crawl (a second of pages): every product page waits for it when it dies.
            # Held to a request rate, a request always waits in hand for its slot, so no batch is written
            # before the batch time (5 s) or the crawl's last page (pipelines/store.py: _quiet)
            crashed = setup.start("RECORDHOUND_STORE_FLUSH_SECONDS=5", "RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND=50",
                                  name="crashed", program=program, failpoints=f"{crash_at}=kill")
            try:
                assert crashed.wait(180) == -signal.SIGKILL, setup.log("crashed")[-3000:]
            finally:
                _stop_tree(crashed)
        node = setup.start(name="launched", program=program)
        try:
            assert node.wait(180) == 0, setup.log("launched")[-3000:]
        finally:
            _stop_tree(node)
        truth = {**shop.truth(), "shop_url": shop.url}
    log = setup.log("launched")
    assert ("writer process died" in log) == writer_dies and "Traceback" not in log, log[-3000:]
    return setup, truth, log


def test_a_crawl_run_by_the_scrapy_console_script_has_a_writer_without_scrapy(database_url: str,
                                                                               tmp_path: Path) -> None:
    """Once the writer has stored its first batch it has imported all it needs: no lxml (Scrapy's
    parser) and no zope.interface (Twisted's) is mapped into it. The crawl matches the shop's truth."""
    console_script = str(Path(sys.executable).parent / "scrapy")
    with ShopProcess(40, seed=73) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start(SLOW_STORE, name="script", program=(console_script,))
        try:
            deadline = time.monotonic() + 120
            while (writer := _writer(node)) is None or not _offers(database_url):
                assert node.process.poll() is None and time.monotonic() < deadline, setup.log("script")[-3000:]
                time.sleep(0.1)
            mapped = Path(f"/proc/{writer}/maps").read_text()
            assert [name for name in ("lxml", "zope") if name in mapped] == [], "the writer imported Scrapy's stack"
            assert node.wait(300) == 0, setup.log("script")[-3000:]
        finally:
            _stop_tree(node)
        assert_crawl_matches_truth(setup, shop.truth())


def test_a_crawl_started_by_a_launcher_without_a_main_guard_stores_everything(database_url: str,
                                                                              tmp_path: Path) -> None:
    """``run.py`` calls Scrapy's ``execute`` at its top level, no ``if __name__ == "__main__"``: the
    crawl ends on its own, exit 0, and its product DB matches the shop's truth field by field."""
    setup, truth, _ = _launched_crawl(tmp_path, database_url, UNGUARDED_LAUNCHER, seed=74)
    assert_crawl_matches_truth(setup, truth)


def test_items_of_classes_the_launcher_defined_are_stored(database_url: str, tmp_path: Path) -> None:
    """A guarded ``run.py`` whose own pipeline turns the releases into subclasses it defines (of
    ``Release`` and ``Offer``): the writer has no ``__main__`` to unpickle them from, so the store
    hands it the plain classes; the crawl ends on its own and matches the shop's truth."""
    setup, truth, log = _launched_crawl(tmp_path, database_url, SUBCLASSING_LAUNCHER, seed=75)
    assert "__main__.Mark" in log  # the launcher's pipeline ran
    assert_crawl_matches_truth(setup, truth)


def test_an_item_holding_a_value_only_the_launcher_has_is_rejected_and_the_rest_stored(database_url: str,
                                                                                        tmp_path: Path) -> None:
    """One release's price is a ``Decimal`` subclass defined in ``run.py``: the writer cannot read
    that item, so it is rejected with the reason and its URL (counted as invalid); the rest of its
    batch and of the crawl is stored as the shop's truth has it (the crawl does not wait forever
    on a writer that dies reading the batch, as it did)."""
    setup, truth, _ = _launched_crawl(tmp_path, database_url, POISONING_LAUNCHER, seed=76)
    _assert_all_but_the_poisoned_release(setup, truth, tmp_path)


def test_an_item_that_kills_the_writer_each_time_is_rejected_and_the_rest_stored(database_url: str,
                                                                                 tmp_path: Path) -> None:
    """One release's price ends the writer process that reads it (as a crash in a driver, or the
    out-of-memory killer on one huge item, would): the writer dies on the batch, again on its retry,
    then the batch is written one item at a time and that item, dying alone twice, is rejected with
    the reason; the crawl ends on its own (before, it retried the batch forever, paused) and the
    rest of the crawl is stored as the shop's truth has it."""
    setup, truth, log = _launched_crawl(tmp_path, database_url, KILLING_LAUNCHER, seed=76, writer_dies=True)
    assert log.count("The database writer process died writing (exit code 70)") == 4, log[-3000:]
    _assert_all_but_the_poisoned_release(setup, truth, tmp_path,
                                         reason="the store's writer process died writing it (exit code 70)")


def test_a_kill_between_the_readable_items_and_the_rejection_loses_nothing(database_url: str, tmp_path: Path) -> None:
    """The same crawl killed (SIGKILL, crawler and writer) once the batch's readable items are written
    and before the unreadable one is rejected, then resumed: the same outcome as without the kill."""
    setup, truth, _ = _launched_crawl(tmp_path, database_url, POISONING_LAUNCHER, seed=76,
                                      crash_at="store.before_unreadable_rejected")
    _assert_all_but_the_poisoned_release(setup, truth, tmp_path)


def _assert_all_but_the_poisoned_release(setup: CrawlSetup, truth: dict[str, Any], tmp_path: Path,
                                         reason: str = "the store's writer process cannot read it") -> None:
    """Every offer but the poisoned release's matches the truth field by field (ids consecutive, and
    PostgreSQL's sequences), the poisoned one is in the source's recent errors and the review
    queue's rejected items with its reason, and ``failed`` holds only the shop's known fault pages."""
    poisoned = [o for o in truth["offers"] if o["path"].startswith("/release/000003-")]
    url = truth["shop_url"].rstrip("/") + poisoned[0]["path"]
    db = ProductDb(setup.database_url)
    try:
        (meta,) = [row[0] for row in db.rows("SELECT metadata FROM sources WHERE name = 'demo'")]
        errors = (meta if isinstance(meta, dict) else json.loads(meta))["recent_errors"]
        assert [e["message"][:len(reason)] for e in errors if e["url"] == url] == [reason], errors  # where and why
        stored = stored_offers(db)
        expected = {o["external_id"]: expected_offer(o) for o in truth["offers"] if o not in poisoned}
        assert sorted(stored) == sorted(expected)
        assert {sku: _compared(stored[sku], want) for sku, want in expected.items()} == expected
        assert_ids_consecutive(db)
        (source_id,) = [row[0] for row in db.rows("SELECT id FROM sources WHERE name = 'demo'")]
    finally:
        db.close()
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / ".recordhound" / "review.sqlite3")))
    try:  # listed with the review queue's rejected items, as every rejected item
        rejected = {r["key"]: r for r in queue.rejected()}
    finally:
        queue.close()
    listed = rejected[f"{source_id}:{poisoned[0]['external_id']}"]
    assert listed["reason"].startswith(reason), listed
    assert_frontier_clean(setup, truth)
