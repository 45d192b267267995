"""Sources and jobs in the admin, driven in headless Debian Chromium with no shell: add the demo
shop by URL, accept the drafted profile, start a worker, see the crawl job finish and its releases
listed; upload the demo's CSV export with its column mapping, SIGKILL the worker mid-file, start
another: the import resumes and the catalog equals the demo's truth. The job page shows the
start-to-first-page latency; the test prints it (docs/benchmarks.md quotes it)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from recordhound.demo import feeds
from recordhound.demo.catalog import Catalog
from recordhound.demo.process import ShopProcess
from recordhound.demo.truth import build_truth
from recordhound.admin import source_jobs
from tests.integration.admin_server import PASSWORD, USER, admin_server
from tests.integration.dbcheck import ProductDb
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_admin_browser import ARTIFACTS, page  # noqa: F401 - the fixture
from tests.integration.truthcheck import assert_ids_consecutive, assert_product_db_matches

MAPPING = """external_id: sku
title: title
artists: {column: artists, split: [" / "]}
label: label
catalog_number: catalog_number
year: year
styles: {column: styles, split: ["; "]}
price: price
in_stock: in_stock
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ReviewEnv]:
    monkeypatch.chdir(tmp_path)  # the processes the admin starts write their logs here
    with review_env("embedded", tmp_path) as opened:
        try:
            yield opened
        finally:
            for process in source_jobs._workers:  # the workers this test's admin started, by PID
                if process.poll() is None:
                    os.kill(process.pid, signal.SIGTERM)
                    process.wait(60)
            source_jobs._workers.clear()


def _settings(tmp_path: Path) -> dict[str, object]:
    return {"RECORDHOUND_PROFILES_DIRS": [str(tmp_path / "profiles")], "RECORDHOUND_TRUST_NEW_ENTITIES": True,
            "RECORDHOUND_UPLOADS_DIR": str(tmp_path / "uploads"), "RECORDHOUND_DRAFTS_DIR": str(tmp_path / "drafts"),
            "RECORDHOUND_WORKER_POLL_SECONDS": 0.2, "RECORDHOUND_JOB_IMPORT_BATCH": 40}


def _login(page: Page, base: str) -> None:
    page.goto(f"{base}/admin/source-jobs")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(f"{base}/admin/source-jobs")


def _wait_status(page: Page, source: str, status: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    row = page.locator(f'tr[data-source="{source}"]')
    while row.get_attribute("data-status") != status:
        assert time.monotonic() < deadline, f"{source}: {row.inner_text()}"
        time.sleep(0.5)
        page.reload()


def _worker_pid(page: Page) -> int:
    text = page.locator("#workers").inner_text()
    return int(text.split("pid ")[1].split(")")[0].split(",")[-1])


def test_add_the_demo_shop_by_url_accept_the_draft_and_see_the_crawl_finish(
        env: ReviewEnv, tmp_path: Path, page: Page) -> None:  # noqa: F811 - the fixture
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with ShopProcess(40, seed=31) as shop, admin_server(env, tmp_path, **_settings(tmp_path)) as base:
        truth = shop.truth()
        _login(page, base)
        page.fill("#add-shop input[name=url]", shop.url.rstrip("/") + "/catalog?page=1")
        page.fill("#add-shop input[name=name]", "demo_by_url")
        page.click("#add-shop button[type=submit]")
        deadline = time.monotonic() + 120
        while page.locator("#draft-status").inner_text() == "running":
            assert time.monotonic() < deadline, "the draft did not finish"
            time.sleep(0.5)
            page.reload()
        expect(page.locator("#draft-status")).to_have_text("ready")
        expect(page.locator("#draft-preview")).to_contain_text("title")  # the per-field preview
        page.screenshot(path=str(ARTIFACTS / "source-draft.png"), full_page=True)
        page.click("#save-draft")
        expect(page.locator("#done")).to_contain_text("queued")
        assert (tmp_path / "profiles" / "demo_by_url.yaml").exists()
        page.click("#start-worker")
        expect(page.locator("#done")).to_contain_text("worker started")
        _wait_status(page, "demo_by_url", "done")
        page.screenshot(path=str(ARTIFACTS / "source-jobs.png"), full_page=True)
        row = page.locator('tr[data-source="demo_by_url"]')
        latency = row.locator("td").nth(6).inner_text()
        print(f"\njob start-to-first-page latency (local worker, demo shop): {latency}")
        page.goto(f"{base}/admin/release/list")
        expect(page.locator("table")).to_contain_text(truth["offers"][0]["title"])
    assert_product_db_matches(env.database_url, truth)


def test_upload_the_csv_export_kill_the_worker_mid_file_and_the_import_resumes(
        env: ReviewEnv, tmp_path: Path, page: Page, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    catalog = Catalog(200, seed=12)
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(feeds.to_csv(catalog))
    with admin_server(env, tmp_path, **_settings(tmp_path)) as base:
        _login(page, base)
        page.set_input_files("#add-file input[name=file]", str(feed))
        page.fill("#add-file input[name=name]", "demo_csv")
        page.fill("#add-file textarea[name=mapping]", MAPPING)
        page.click("#add-file button[type=submit]")
        expect(page.locator("#done")).to_contain_text("queued")
        monkeypatch.setenv("RECORDHOUND_FAILPOINTS", "import.after_commit=stop@3")  # the worker freezes mid-file
        page.click("#start-worker")
        monkeypatch.delenv("RECORDHOUND_FAILPOINTS")
        pid = _worker_pid(page)
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert time.monotonic() < deadline, "the worker did not reach the crash point"
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        source_jobs._workers[-1].wait(30)
        page.reload()
        row = page.locator('tr[data-source="demo_csv"]')
        assert row.get_attribute("data-status") == "running"  # its worker is gone; the job is not lost
        expect(row.locator(".progress-text")).to_contain_text("80 of ")
        page.click("#start-worker")
        _wait_status(page, "demo_csv", "done", timeout=120)
        expect(row.locator("td").nth(5)).to_have_text("2")  # attempts
    assert_product_db_matches(env.database_url, build_truth(catalog))
    db = ProductDb(env.database_url)
    try:
        assert_ids_consecutive(db)
    finally:
        db.close()
