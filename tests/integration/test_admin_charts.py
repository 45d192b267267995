"""Charts in the admin: JSON data endpoints, and uPlot canvases drawn in headless Chromium.

Two real crawls of the demo shop (price epochs 0 and 1) fill the product database; the admin runs
over it. Screenshots of an offer's price chart and of the landing page's crawl-rate chart are saved
under ``artifacts/screenshots/`` (or $RECORDHOUND_ARTIFACTS_DIR); the test prints their paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import text

from recordhound.demo.process import ShopProcess
from tests.integration.admin_server import PASSWORD, USER, admin_server, logged_in
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_admin_browser import ARTIFACTS, page  # noqa: F401 - the fixture
from tests.integration.test_review_queue import release
from tests.services import run_crawl

RELEASES = 30
NON_EMPTY = 300  # painted pixels: more than the axes' labels alone would leave at this size


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite product database after two price epochs of the demo shop (every change written)."""
    folder = tmp_path_factory.mktemp("charts")
    url = f"sqlite:///{folder / 'product.sqlite3'}"
    for epoch in (0, 1):
        with ShopProcess(RELEASES, seed=11, epoch=epoch) as shop:
            done = run_crawl(folder, url, "-a", "source=demo", "-a", f"base_url={shop.url}",
                             "-s", "RECORDHOUND_PRICE_REVIEW_THRESHOLD=1000")
            assert done.returncode == 0, done.stderr[-3000:]
    return folder


@pytest.fixture
def env(crawled: Path, tmp_path: Path) -> Iterator[ReviewEnv]:
    (tmp_path / "product.sqlite3").write_bytes((crawled / "product.sqlite3").read_bytes())
    with review_env("embedded", tmp_path) as opened:
        opened.writer().write(opened.source(), [release("waits", ["Nobody Known Yet"])])  # a review backlog
        yield opened


def _changed_offer(env: ReviewEnv) -> tuple[int, int]:
    with env.engine.connect() as conn:
        row = conn.execute(text("SELECT o.id, o.release_id FROM offers o JOIN offer_history h ON h.offer_id = o.id "
                                "ORDER BY o.id LIMIT 1")).one()
    return int(row[0]), int(row[1])


def test_chart_data_is_json_behind_the_login(env: ReviewEnv, tmp_path: Path) -> None:
    offer, release_id = _changed_offer(env)
    with admin_server(env, tmp_path) as base:
        import requests

        anonymous = requests.get(f"{base}/admin/charts/offer/{offer}.json", allow_redirects=False)
        assert anonymous.status_code in (302, 303, 401)
        session, _ = logged_in(base)
        prices = session.get(f"{base}/admin/charts/offer/{offer}.json").json()
        assert len(prices["x"]) >= 2 and len(prices["series"]) == 1
        values = prices["series"][0]["values"]
        assert values[0] != values[-1], "the offer's price changed between the epochs"
        per_release = session.get(f"{base}/admin/charts/release/{release_id}.json").json()
        assert per_release["series"] and all(len(s["values"]) == len(per_release["x"]) for s in per_release["series"])
        rate = session.get(f"{base}/admin/charts/crawl-rate.json").json()
        assert [s["label"] for s in rate["series"]] == ["demo: items stored / min", "demo: pages / min"]
        assert any(v for v in rate["series"][0]["values"] if v)
        backlog = session.get(f"{base}/admin/charts/backlog.json").json()
        assert backlog["series"][0]["values"][-1] == 1
        home = session.get(f"{base}/admin/").text
    assert "{'" not in home and "problems:" in home  # the crawl's errors as words and numbers, not a dict


def _painted(page: Page, selector: str) -> int:
    """How many pixels of the chart's canvas are not transparent."""
    return int(page.locator(selector).evaluate(
        """canvas => { const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
                       let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"""))


def test_price_and_crawl_rate_charts_are_drawn(env: ReviewEnv, tmp_path: Path, page: Page) -> None:  # noqa: F811
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    offer, release_id = _changed_offer(env)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    missing: list[str] = []
    page.on("response", lambda response: missing.append(response.url) if response.status >= 400 else None)
    with admin_server(env, tmp_path) as base:
        page.goto(f"{base}/admin/login")
        page.fill("input[name=username]", USER)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")

        page.goto(f"{base}/admin/offer/details/{offer}")
        chart = page.locator("#price-chart")
        expect(chart.locator("canvas")).to_have_count(1)
        price_png = ARTIFACTS / "offer-price-chart.png"
        chart.screenshot(path=str(price_png))
        assert _painted(page, "#price-chart canvas") > NON_EMPTY

        page.goto(f"{base}/admin/release/details/{release_id}")
        expect(page.locator("#price-chart canvas")).to_have_count(1)
        assert _painted(page, "#price-chart canvas") > NON_EMPTY

        page.goto(f"{base}/admin/")
        rate = page.locator("#crawl-rate-chart")
        expect(rate.locator("canvas")).to_have_count(1)
        expect(page.locator("#backlog-chart canvas")).to_have_count(1)
        rate_png = ARTIFACTS / "crawl-rate-chart.png"
        rate.screenshot(path=str(rate_png))
        assert _painted(page, "#crawl-rate-chart canvas") > NON_EMPTY
    print(f"chart screenshots: {price_png} {rate_png}")
    assert [u for u in missing if not u.endswith("/favicon.ico")] == []  # every script, style and JSON served
    # no CSP violation, no script error (Chromium's own favicon request is not the page's: not in `missing`)
    assert [e for e in errors if not e.startswith("Failed to load resource")] == []
    assert price_png.stat().st_size > 5_000 and rate_png.stat().st_size > 5_000
