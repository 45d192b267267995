"""A real crawl of the real demo shop into SQLite and PostgreSQL: exact rows, faults, re-crawls."""

from __future__ import annotations

from pathlib import Path

from recordhound.demo.process import ShopProcess
from tests.integration.dbcheck import ProductDb
from tests.services import run_crawl

RELEASES = 500


def _crawl(shop: ShopProcess, database_url: str, workdir: Path, *settings: str):  # type: ignore[no-untyped-def]
    result = run_crawl(workdir, database_url, "-a", "source=demo", "-a", f"base_url={shop.url}", *settings)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_crawl_stores_the_catalog_then_recrawl_writes_nothing(database_url: str, tmp_path: Path) -> None:
    db = ProductDb(database_url)
    with ShopProcess(RELEASES, seed=7) as shop:
        truth = shop.truth()
        first = _crawl(shop, database_url, tmp_path)
        counts = db.counts()
        expected = truth["counts"]
        assert counts["releases"] == expected["releases"]
        assert counts["offers"] == expected["offers"]
        assert counts["artists"] == expected["artists"]
        assert counts["labels"] == expected["labels"]
        assert counts["styles"] == expected["styles"]
        assert counts["offer_history"] == 0
        assert first.summary["stored"]["offers_new"] == expected["offers"]

        stored = db.offers()
        for offer in truth["offers"]:
            got = stored[offer["external_id"]]
            assert (got["price"], got["currency"], bool(got["in_stock"])) == (
                offer["price"], offer["currency"], offer["in_stock"]), offer["external_id"]
        _assert_faults_handled(db, shop, truth, first.stats)
        _assert_ids_consecutive(db)

        before = db.snapshot()
        again = _crawl(shop, database_url, tmp_path)
        assert db.snapshot() == before, "re-crawling an unchanged catalog changed the database"
        assert again.summary["stored"]["offers_unchanged"] == expected["offers"]
        assert again.summary["stored"].get("offers_new", 0) == 0
    db.close()


def _assert_faults_handled(db: ProductDb, shop: ShopProcess, truth: dict, stats: dict) -> None:  # type: ignore[type-arg]
    faults = truth["faults"]
    hits = shop.hits()
    titles = {r.title for r in db.rows("SELECT title FROM releases")}
    offers = db.offers()
    assert hits[faults["flaky"]] == 2 and stats["recordhound/retry/http_500"] == 1  # 500 once, then stored
    assert hits[faults["not_found"]] == 1 and stats["recordhound/errors/http_404"] == 1
    assert hits[faults["pagination_loop"]] == 1  # the loop back to page 1 is not refetched
    assert hits[faults["redirect"]] == 1  # followed once; its target is fetched once (below)
    by_path = {o["path"]: o for o in truth["offers"]}
    assert by_path[faults["non_utf8"]]["title"] in titles  # decoded from ISO-8859-1
    assert by_path[faults["broken_html"]]["external_id"] in offers
    no_price = by_path[faults["no_price"]]
    assert offers[no_price["external_id"]]["price"] is None
    assert stats["recordhound/errors/field_price"] == 1
    assert stats["recordhound/errors/rejected"] == 1 and stats["item_dropped_count"] == 1
    meta = db.source_meta()
    assert meta["status"] == "completed"
    recorded = {(e["kind"], e["url"].split("/", 3)[-1]) for e in meta["recent_errors"]}
    assert ("http_404", faults["not_found"].lstrip("/")) in recorded
    assert ("rejected", faults["rejected"].lstrip("/")) in recorded
    assert ("field_price", faults["no_price"].lstrip("/")) in recorded
    product_paths = [p for p in hits if p.startswith("/release/")]
    assert all(hits[p] == 1 for p in product_paths if p != faults["flaky"]), "a product was fetched twice"


def _assert_ids_consecutive(db: ProductDb) -> None:
    for table, count in db.counts().items():
        if table in db.max_ids():
            assert db.max_ids()[table] == (count or None), f"{table}: IDs are not 1..{count}"


def test_next_epoch_writes_one_history_row_per_changed_offer(database_url: str, tmp_path: Path) -> None:
    db = ProductDb(database_url)
    with ShopProcess(RELEASES, seed=7, epoch=0) as shop:
        _crawl(shop, database_url, tmp_path)
    before = db.snapshot()
    with ShopProcess(RELEASES, seed=7, epoch=1) as shop:
        changed = {c["external_id"]: c for c in shop.truth()["changed_offers"]}
        # every change written straight through (tests/integration/test_review_crawl.py holds large ones)
        result = _crawl(shop, database_url, tmp_path, "-s", "RECORDHOUND_PRICE_REVIEW_THRESHOLD=1000")
    assert changed, "the demo shop's next epoch should change some prices"
    assert any(abs(c["change_percent"]) < 5 for c in changed.values())
    assert any(abs(c["change_percent"]) > 5 for c in changed.values())
    history = db.rows(
        "SELECT o.external_id, h.old_price, h.new_price FROM offer_history h JOIN offers o ON o.id = h.offer_id")
    got = {r.external_id: (f"{r.old_price:.2f}", f"{r.new_price:.2f}") for r in history}
    assert got == {k: (c["old_price"], c["new_price"]) for k, c in changed.items()}
    assert result.summary["stored"]["price_changes"] == len(changed)
    after = db.snapshot()
    for table in ("releases", "offers", "artists", "labels", "styles"):
        assert after["counts"][table] == before["counts"][table]
        assert after["max_ids"][table] == before["max_ids"][table]
    db.close()


def test_items_are_written_when_nothing_is_downloading_not_at_the_batch_time(database_url: str,
                                                                              tmp_path: Path) -> None:
    """With an hour's batch time and batches larger than the shop, the crawl still ends on its own
    with everything stored: whenever the downloader empties (a retry's wait, the last pages) no page's
    items will join a batch soon, so what waits is written then (before: each item waited for the
    hour's tick and the crawl hung)."""
    from tests.integration.crawlers import CrawlSetup
    from tests.integration.truthcheck import assert_crawl_matches_truth, assert_ids_consecutive

    with ShopProcess(40, seed=7) as shop:
        truth = shop.truth()
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        crawler = setup.start("RECORDHOUND_STORE_FLUSH_SECONDS=3600", "RECORDHOUND_STORE_BATCH_SIZE=1000")
        killed = crawler.wait_or_kill(120)
        assert not killed, "the crawl did not end in 120 s: its items waited for the batch time"
        assert crawler.process.returncode == 0, setup.log("crawl")[-3000:]
        assert_crawl_matches_truth(setup, truth)
    assert_ids_consecutive(database_url)


def test_a_crawl_held_to_a_request_rate_keeps_its_batches(tmp_path: Path) -> None:
    """Between two requests of a rate-limited host the downloader is empty while the next request
    waits in the node's hand: that is no reason to write each page's items alone (each batch is a
    few transactions). The batches stay about one per batch time; the crawl still matches the truth."""
    from tests.integration.crawlers import CrawlSetup
    from tests.integration.truthcheck import assert_crawl_matches_truth

    database_url = f"sqlite:///{tmp_path / 'product.sqlite3'}"
    with ShopProcess(60, seed=7) as shop:
        truth = shop.truth()
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        crawler = setup.start("RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND=25")
        assert crawler.wait(180) == 0, setup.log("crawl")[-3000:]
        assert_crawl_matches_truth(setup, truth)
    stats = crawler.stats()
    items, batches = stats["recordhound/store/items"], stats["recordhound/store/batches"]
    assert items >= len(truth["offers"]) // 2 and batches <= items // 3, (items, batches)
