"""JavaScript pages rendered in the system Chromium through scrapy-playwright."""

from __future__ import annotations

import json
from pathlib import Path

from recordhound.demo.process import ShopProcess
from recordhound.text import catalog_number_key, name_key
from tests.integration.dbcheck import ProductDb
from tests.services import run_crawl

RELEASES = 60


def releases(db: ProductDb) -> set[tuple]:  # type: ignore[type-arg]
    """Each release with its entities by matching key: which spelling names an entity depends on
    which page the crawl met first ("Hip Hop" or "hip hop"), not on how the page was fetched."""
    found = set()
    for r in db.rows("SELECT id, title, catalog_number, year, label_id FROM releases"):
        artists = tuple(a for (a,) in db.rows(
            "SELECT a.name FROM release_artists ra JOIN artists a ON a.id = ra.artist_id "
            "WHERE ra.release_id = :r ORDER BY ra.position", r=r.id))
        styles = frozenset(s for (s,) in db.rows(
            "SELECT s.name FROM release_styles rs JOIN styles s ON s.id = rs.style_id WHERE rs.release_id = :r", r=r.id))
        label = db.scalar("SELECT name FROM labels WHERE id = :l", l=r.label_id)
        found.add((r.title, tuple(map(name_key, artists)), name_key(label), catalog_number_key(r.catalog_number), r.year,
                   frozenset(map(name_key, styles))))
    return found


def test_js_section_through_chromium_stores_the_releases_of_the_html_section(tmp_path: Path) -> None:
    html_db, js_db = f"sqlite:///{tmp_path / 'html.sqlite3'}", f"sqlite:///{tmp_path / 'js.sqlite3'}"
    (tmp_path / "html").mkdir()
    (tmp_path / "js").mkdir()
    with ShopProcess(RELEASES, seed=4) as shop:
        plain = run_crawl(tmp_path / "html", html_db, "-a", "source=demo", "-a", f"base_url={shop.url}")
        before = shop.hits()
        rendered = run_crawl(tmp_path / "js", js_db, "-a", "source=demo_js", "-a", f"base_url={shop.url}",
                             "-s", "RECORDHOUND_RENDER_MAX_PAGES=3")
        after = shop.hits()
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert rendered.returncode == 0, rendered.stderr[-3000:]
    api_calls = {p: n - before.get(p, 0) for p, n in after.items() if p.startswith("/js/api/")}
    assert api_calls and all(n >= 1 for n in api_calls.values())  # the data came through the script
    html, js = ProductDb(html_db), ProductDb(js_db)
    assert releases(js) == releases(html) and len(releases(js)) == RELEASES
    html_offers, js_offers = html.offers(), js.offers()
    assert {k: (v["price"], v["currency"], v["in_stock"]) for k, v in js_offers.items()} == {
        k: (v["price"], v["currency"], v["in_stock"]) for k, v in html_offers.items()}
    stats = rendered.stats
    assert stats["playwright/page_count"] == stats["playwright/page_count/closed"]  # every page closed
    assert stats["playwright/page_count/max_concurrent"] <= 3  # bounded
    # every page through the browser; robots.txt (read once, plain HTTP) is not a page
    assert stats["playwright/page_count"] == stats["response_received_count"] - stats.get("robotstxt/response_count", 0)
    assert "playwright/page_count" not in plain.stats  # the plain section never starts a browser
    html.close()
    js.close()


def test_missing_browser_is_a_start_up_error_that_says_how_to_install_it(tmp_path: Path) -> None:
    with ShopProcess(20, seed=4) as shop:
        done = run_crawl(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite3'}", "-a", "source=demo_js",
                         "-a", f"base_url={shop.url}", "-s", f"RECORDHOUND_CHROMIUM_PATH={tmp_path / 'no-chromium'}")
        assert [p for p in shop.hits() if not p.startswith("/_")] == []  # nothing was fetched
    assert done.returncode != 0
    assert "no Chromium at" in done.stderr and "apt-get install -y chromium" in done.stderr


def test_rendered_requests_are_stored_as_json_without_live_objects(tmp_path: Path) -> None:
    from scrapy import Request, Spider
    from scrapy_playwright.page import PageMethod

    from recordhound.frontier.serialize import dumps, loads
    from recordhound.middlewares.render import RENDER_META, RenderMiddleware

    spider = Spider("t")
    request = Request("http://127.0.0.1/js/release/x", meta={RENDER_META: {"wait_for": "h1", "timeout_ms": 5000}})
    RenderMiddleware().process_request(request)
    assert isinstance(request.meta["playwright_page_methods"][0], PageMethod)
    stored = json.loads(dumps(request, spider))
    assert stored["meta"] == {RENDER_META: {"wait_for": "h1", "timeout_ms": 5000}}
    again = loads(dumps(request, spider), spider)
    RenderMiddleware().process_request(again)
    assert again.meta["playwright"] is True and again.meta["playwright_page_methods"][0].args == ("h1",)
