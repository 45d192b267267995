"""The store's writer process owns the product database: a crawl with the store on never loads
SQLAlchemy in the crawler process (about 0.35 s of a node's start, docs/benchmarks.md), yet the
source's row, its status and its crawl samples are written as before, and the product DB matches
the shop's truth. A database the crawl cannot use is a one-line error: before the crawl when the
start-up check can tell (a schema newer than this recordhound), else the crawl stops with exit 1
and the pages it fetched go back to the queue, none of them failed (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text

from recordhound import settings as project_settings
from recordhound.db.engine import make_engine
from recordhound.db.migrate import open_database, packaged_head
from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup
from tests.integration.truthcheck import FAILED_FAULTS, assert_crawl_matches_truth, failed_paths
from tests.services import PG_ADMIN_URL, PostgresDatabase, run_crawl

PROBE = "tests.integration.loaded_modules.LoadedModules"


def _source_row(database_url: str) -> tuple[int, dict, list[tuple[bool, int]]]:  # type: ignore[type-arg]
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            source_id, meta = conn.execute(text("SELECT id, metadata FROM sources WHERE name = 'demo'")).one()
            samples = [tuple(r) for r in conn.execute(text(
                "SELECT finished, stored FROM crawl_samples WHERE source_id = :id ORDER BY id"), {"id": source_id})]
    finally:
        engine.dispose()
    return source_id, meta if isinstance(meta, dict) else json.loads(meta), samples  # type: ignore[return-value]


def _as_admin(database: PostgresDatabase, statement: str) -> None:
    """``statement`` in the test's database, as the PostgreSQL superuser the tests use."""
    engine = create_engine(make_url(PG_ADMIN_URL).set(database=database.name), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def test_the_crawler_process_leaves_the_product_database_to_its_writer(database_url: str, tmp_path: Path) -> None:
    modules = tmp_path / "modules.txt"
    extensions = json.dumps({**project_settings.EXTENSIONS, PROBE: 900})
    with ShopProcess(40, seed=73) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url)
        node = setup.start(f"EXTENSIONS={extensions}", f"LOADED_MODULES_FILE={modules}")
        assert node.wait(300) == 0, setup.log("crawl")[-3000:]
        loaded = modules.read_text().split()
        assert "scrapy" in loaded and "sqlalchemy" not in loaded and "alembic" not in loaded
        truth = shop.truth()
        assert_crawl_matches_truth(setup, truth)
    source_id, meta, samples = _source_row(database_url)
    assert source_id == 1 and meta["status"] == "completed" and meta["finish_reason"] == "finished"
    assert meta["started_at"] and meta["parsed_at"] and meta["counts"]["stored"] == truth["counts"]["offers"]
    assert samples[0] == (False, 0) and samples[-1] == (True, truth["counts"]["offers"])


def test_a_database_newer_than_this_recordhound_is_one_line_before_anything_is_fetched(
        database_url: str, tmp_path: Path) -> None:
    engine = open_database(database_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with ShopProcess(40, seed=74) as shop:
        result = run_crawl(tmp_path, database_url, "-a", "source=demo", "-a", f"base_url={shop.url}", timeout=120)
        served = shop.pages_served()
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "schema revision 9999" in errors[0] and packaged_head() in errors[0], result.stderr[-2000:]
    assert served == 0


@pytest.mark.parametrize("table", ["sources", "alembic_version"])
def test_a_store_that_cannot_open_stops_the_crawl_and_its_pages_go_back_to_the_queue(table: str, tmp_path: Path) -> None:
    """PostgreSQL: the crawl's role may not touch one of the tables the store opens with (the start-up
    check connects, and cannot tell). The crawl stops with one line and exit 1; no page is failed but the shop's fault pages,
    and none is left leased; once the role may write, the crawl resumed matches the shop's truth."""
    with PostgresDatabase(own_role=True) as database, ShopProcess(40, seed=75) as shop:
        open_database(database.url).dispose()
        _as_admin(database, f"ALTER TABLE {table} OWNER TO CURRENT_USER")  # the crawl's role may not touch it
        setup = CrawlSetup(tmp_path, shop.url, database.url)
        node = setup.start(name="refused")
        assert node.wait(300) == 1, setup.log("refused")[-3000:]
        log = setup.log("refused")
        assert "Traceback" not in log, log[-3000:]
        errors = [line for line in log.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and errors[0].startswith("error: the crawl stopped: product store: ") and \
            f"permission denied for table {table}" in errors[0], log[-3000:]
        assert "WARNING: Dropped: not stored" not in log  # the items' pages go back to the queue: said once, not per item
        known = {shop.truth()["faults"][fault].lstrip("/") for fault in FAILED_FAULTS}
        assert set(failed_paths(setup)) <= known and setup.counts().leased_total == 0  # only fault pages failed
        _as_admin(database, f'ALTER TABLE {table} OWNER TO "{database.role}"')
        assert setup.start(name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
        assert_crawl_matches_truth(setup, shop.truth())
