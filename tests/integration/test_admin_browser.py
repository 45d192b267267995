"""The web admin in headless Debian Chromium, driven by Playwright for Python.

Screenshots of the Pending review and Crawl status pages are saved under
``artifacts/screenshots/`` (or $RECORDHOUND_ARTIFACTS_DIR) for a human to look at.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.integration.admin_server import PASSWORD, USER, admin_server
from tests.integration.review_env import ReviewEnv
from tests.integration.test_admin_http import env  # noqa: F401 - the fixture
from tests.integration.test_review_queue import offer_skus, release

ARTIFACTS = Path(os.environ.get("RECORDHOUND_ARTIFACTS_DIR")
                 or Path(__file__).resolve().parents[2] / "artifacts" / "screenshots")
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def page() -> Iterator[Page]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                             args=["--disable-gpu", "--disable-dev-shm-usage"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            yield context.new_page()
            context.close()
        finally:
            browser.close()


def test_reviewer_approves_merges_applies_and_sees_the_release(env: ReviewEnv, tmp_path: Path, page: Page) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    source = env.source()
    env.seed("artist", "Daft Punk")
    env.writer(trusted=True).write(source, [release("xss", ["Daft Punk"], title=SCRIPT)])
    env.writer().write(source, [release("parked", ["Brand New Artist", "Daft Pnuk"], title="Parked Release")])
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    with admin_server(env, tmp_path, apply=True) as base:
        page.goto(f"{base}/admin/review")
        expect(page).to_have_url(f"{base}/admin/login")  # login first
        page.fill("input[name=username]", USER)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.goto(f"{base}/admin/review")
        expect(page.locator('tr[data-name="Brand New Artist"]')).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "pending-review.png"), full_page=True)

        page.locator("input.select-all").check()  # select-all ticks every entry of the page
        assert page.locator("input.pending-entry:checked").count() == page.locator("input.pending-entry").count() == 2
        page.locator("input.select-all").uncheck()
        assert page.locator("input.pending-entry:checked").count() == 0
        page.locator('tr[data-name="Brand New Artist"] button.approve').click()
        expect(page.locator("#done")).to_contain_text("approve")
        expect(page.locator('tr[data-name="Brand New Artist"]')).to_have_count(0)  # decided: off the list at once
        _assert_on_screen(page, 'tr[data-name="Daft Pnuk"] button', 1280)  # the message does not push them off
        page.locator('tr[data-name="Daft Pnuk"] button.merge-suggestion', has_text="Daft Punk").click()
        expect(page.locator("#done")).to_contain_text("merge")

        # nothing else runs: the admin's own apply worker puts the release in the catalog within 10 s
        deadline = time.monotonic() + 10
        while True:
            page.goto(f"{base}/admin/release/list?search=Parked")
            if "Parked Release" in page.locator("table").inner_text() or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        expect(page.locator("table")).to_contain_text("Parked Release")
        assert offer_skus(env) == {"xss", "parked"}
        page.goto(f"{base}/admin/release/list")
        expect(page.locator("table")).to_contain_text(SCRIPT)  # shown as text...
        assert page.locator("table script").count() == 0  # ...not as an element
        page.goto(f"{base}/admin/artist/details/1")
        expect(page.locator("body")).to_contain_text("Daft Pnuk")  # the merged name is a synonym

        page.goto(f"{base}/admin/status")
        expect(page.locator('tr[data-source="demo"]')).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "crawl-status.png"), full_page=True)
    assert dialogs == []  # no script ran
    assert (ARTIFACTS / "pending-review.png").stat().st_size > 10_000
    assert (ARTIFACTS / "crawl-status.png").stat().st_size > 10_000


def _assert_on_screen(page: Page, selector: str, width: int) -> None:
    """The message sits above the list (not in a column beside it), and every button is in view."""
    message, table = page.locator("#done").bounding_box(), page.locator("table#pending").bounding_box()
    assert message is not None and table is not None
    assert message["y"] + message["height"] <= table["y"] and message["width"] >= table["width"] - 2, (message, table)
    buttons = page.locator(selector)
    assert buttons.count() >= 3
    for index in range(buttons.count()):
        box = buttons.nth(index).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, index, box)
