"""A crawl that finished but failed says so: the source is `failed` with the reason, and
`scrapy crawl` exits 1 (Spidermon's monitors at spider close, extensions/health.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from recordhound.demo.process import ShopProcess
from tests.integration.dbcheck import ProductDb
from tests.ports import free_port
from tests.services import ROOT, crawl_env, run_crawl

QUICK = ("-s", "RECORDHOUND_RETRY_BASE_SECONDS=0.2", "-s", "RECORDHOUND_RETRY_CAP_SECONDS=0.5")


def _source(database_url: str) -> dict[str, object]:
    db = ProductDb(database_url)
    try:
        (meta,) = [row[0] for row in db.rows("SELECT metadata FROM sources WHERE name = 'demo'")]
    finally:
        db.close()
    return meta if isinstance(meta, dict) else json.loads(meta)  # type: ignore[no-any-return]


def test_a_crawl_of_an_unreachable_shop_exits_non_zero_and_marks_the_source_failed(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'product.sqlite3'}"
    done = run_crawl(tmp_path, database, "-a", "source=demo", "-a", f"base_url=http://127.0.0.1:{free_port()}/",
                     *QUICK)
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "fetched no page" in errors[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    meta = _source(database)
    assert meta["status"] == "failed", meta
    assert "fetched no page" in str(meta["error_message"]) and "download_failed" in str(meta["error_message"])
    assert "fetched no page" in done.stdout  # the summary says which check failed
    documented = (ROOT / "docs/howto/alerts.md").read_text().split("```text\n", 1)[1].split("\n", 1)[0]
    assert re.sub(r"\d+", "N", errors[0]) == re.sub(r"\d+", "N", documented), "docs/howto/alerts.md's example line"


def test_a_crawl_whose_selectors_find_nothing_fails_and_a_healthy_one_completes(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    bundled = (Path(__file__).parents[2] / "recordhound/sources/profiles/demo.yaml").read_text()
    (profiles / "demo.yaml").write_text(bundled.replace("title: h1.title::text", "title: h1.heading::text"))
    with ShopProcess(30, seed=71) as shop:
        broken_db = f"sqlite:///{tmp_path / 'broken.sqlite3'}"
        broken = run_crawl(tmp_path, broken_db, "-a", "source=demo", "-a", f"base_url={shop.url}")
        assert broken.returncode == 1, broken.stderr[-2000:]
        assert "stored and parked no item from" in broken.stderr
        assert _source(broken_db)["status"] == "failed"

        (profiles / "demo.yaml").write_text(bundled)
        healthy_db = f"sqlite:///{tmp_path / 'healthy.sqlite3'}"
        healthy = run_crawl(tmp_path, healthy_db, "-a", "source=demo", "-a", f"base_url={shop.url}",
                            "-s", f"RECORDHOUND_FRONTIER_DIR={tmp_path / 'other-frontier'}")
        assert healthy.returncode == 0, healthy.stderr[-2000:]
        meta = _source(healthy_db)
        assert meta["status"] == "completed" and healthy.summary["health"] == "ok", meta


def test_a_short_run_is_judged_with_the_crawl_s_earlier_runs(tmp_path: Path) -> None:
    """The crawl's dead letters (the shop's 404 and redirect loop) retried after a complete crawl: the
    run fetches exactly those two and both fail again. Before, its failed share was 2 of 2 (100 %): the
    crawl "failed its health checks", exit 1, the source marked failed, for a page the shop always
    fails (a resumed crawl's last few pages met the same). A run that decided fewer than 20 requests is
    judged with the crawl's earlier runs now (2 of 68); a crawl of a shop that is down still fails."""
    database = f"sqlite:///{tmp_path / 'product.sqlite3'}"
    with ShopProcess(40, seed=72) as shop:
        first = run_crawl(tmp_path, database, "-a", "source=demo", "-a", f"base_url={shop.url}")
        assert first.returncode == 0, first.stderr[-2000:]
        retry = [sys.executable, "-m", "recordhound", "frontier", "retry", "--source", "demo", "--all"]
        retried = subprocess.run(retry, cwd=tmp_path, env=crawl_env(DATABASE_URL=database), capture_output=True, text=True,
                                 timeout=60)
        assert retried.returncode == 0, retried.stderr
        again = run_crawl(tmp_path, database, "-a", "source=demo", "-a", f"base_url={shop.url}")
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stats["recordhound/frontier/failed"] == 2 and not again.stats.get("recordhound/frontier/acked"), \
        again.stats
    assert again.summary["health"] == "ok" and _source(database)["status"] == "completed"
