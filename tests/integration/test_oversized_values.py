"""Values longer than their columns, on PostgreSQL (which refuses them; SQLite would keep them),
and a page with bytes that are not UTF-8 (a decoder would write U+FFFD): rejected, recorded."""

from __future__ import annotations

from pathlib import Path

from recordhound.demo.process import ShopProcess
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import assert_product_db_matches
from tests.services import PostgresDatabase, run_crawl


def test_an_oversized_item_is_rejected_with_its_reason_and_its_batch_is_stored(tmp_path: Path) -> None:
    with PostgresDatabase() as database, ShopProcess(60, seed=5) as shop:
        truth = shop.truth()
        result = run_crawl(tmp_path, database.url, "-a", "source=demo", "-a", f"base_url={shop.url}",
                           "-s", "RECORDHOUND_STORE_BATCH_SIZE=500", "-s", "RECORDHOUND_STORE_FLUSH_SECONDS=5")
        assert result.returncode == 0, result.stderr[-3000:]
        assert_product_db_matches(database.url, truth)  # everything else of the one big batch is there
        assert result.stats["recordhound/errors/invalid_item"] == 2
        assert result.stats["recordhound/errors/invalid_encoding"] == 1 == truth["counts"]["invalid"] - 2
        db = ProductDb(database.url)
        recent = {e["url"].split("/", 3)[-1]: e["message"] for e in db.source_meta()["recent_errors"]
                  if e["kind"] in ("invalid_item", "invalid_encoding")}
        db.close()
        long_url, long_field = truth["faults"]["long_url"].lstrip("/"), truth["faults"]["long_field"].lstrip("/")
        assert "external_id is 2" in recent[long_url] and "the column holds 200" in recent[long_url]
        assert "title is 4" in recent[long_field] and "the column holds 300" in recent[long_field]
        bad_bytes = truth["faults"]["invalid_bytes"].lstrip("/")
        assert "not valid utf-8 at offset" in recent[bad_bytes]
