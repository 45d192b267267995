"""Real-shop shapes: for each platform-like section of the demo shop (Shopify-like, WooCommerce-
like, Bandcamp-like, marketplace), ``recordhound profile draft`` from the section's first listing
URL, no hand edits, then a crawl: the product DB equals the section's truth (``/_truth.json``)
offer by offer (format, condition, grades, price, currency, availability, barcode, catalogue
numbers: the WooCommerce-like shop has a release with two). robots.txt is obeyed: the market's
reserved copy, which it disallows, is never fetched."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from recordhound.demo.process import ShopProcess
from tests.integration.truthcheck import assert_product_db_matches
from tests.services import run_crawl

RESERVED = "/market/release/reserved-copy"
STORE_API = "/woo/wp-json/wc/store/v1/products"


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopProcess]:
    with ShopProcess(120, seed=5) as running:
        yield running


def _recordhound(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}
    return subprocess.run([sys.executable, "-m", "recordhound", *args], cwd=workdir, capture_output=True,
                          text=True, timeout=300, env=env)


EXPECTED_DRAFT = {  # what the draft must have recognised, per section
    "shopify": {"platform": "shopify", "title_rules": ["artist_title_catno"]},
    "woo": {"platform": "woocommerce", "title_rules": ["artist_title"]},  # its Store API is open
    "bandcamp": {"structured": "schema.org", "title_rules": ["catno_slashes_artist_title"]},
    "market": {"structured": "schema.org"},
}


@pytest.mark.parametrize("section", ["shopify", "woo", "bandcamp", "market"])
def test_drafted_profile_crawls_the_section_to_its_truth(shop: ShopProcess, tmp_path: Path, section: str) -> None:
    truth: dict[str, Any] = shop.truth()["sections"][section]
    assert len({o["format"] for o in truth["offers"]}) > 1 or section in ("market",)
    if section == "woo":  # a reissue with two catalogue numbers: both stored, in order, the first in catalog_number
        assert [o["catalog_numbers"] for o in truth["offers"] if len(o["catalog_numbers"]) == 2]
    drafted = tmp_path / "drafted.yaml"
    done = _recordhound(tmp_path, "profile", "draft", shop.url.rstrip("/") + truth["first_listing"],
                        "--name", f"drafted_{section}", "-o", str(drafted))
    assert done.returncode == 0, done.stderr[-3000:]
    document = yaml.safe_load(drafted.read_text())
    for key, value in EXPECTED_DRAFT[section].items():
        assert document.get(key) == value, drafted.read_text()
    database = f"sqlite:///{tmp_path / 'drafted.sqlite3'}"
    before = shop.hits().get(RESERVED, 0)
    result = run_crawl(tmp_path, database, "-a", f"source={drafted}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_product_db_matches(database, truth)
    assert result.stats.get("recordhound/errors", 0) == 0, result.stats
    if section == "market":  # linked from the first listing page, disallowed by robots.txt
        assert shop.hits().get(RESERVED, 0) == before == 0
        assert result.stats.get("recordhound/robots/forbidden") == 1, result.stats


def _store_api_hits(hits: dict[str, int]) -> int:
    return sum(n for path, n in hits.items() if path.startswith(STORE_API))


def test_the_woocommerce_store_api_gives_every_product_without_a_product_page(shop: ShopProcess, tmp_path: Path) -> None:
    truth: dict[str, Any] = shop.truth()["sections"]["woo"]
    before = shop.hits()
    drafted = tmp_path / "drafted.yaml"
    done = _recordhound(tmp_path, "profile", "draft", shop.url.rstrip("/") + truth["first_listing"], "-o", str(drafted))
    assert done.returncode == 0, done.stderr[-3000:]
    assert yaml.safe_load(drafted.read_text())["base_url"] == shop.url.rstrip("/") + "/woo/"
    probed = shop.hits()
    assert 1 <= _store_api_hits(probed) - _store_api_hits(before) <= 2  # the draft's probes, on the shop's host
    database = f"sqlite:///{tmp_path / 'api.sqlite3'}"
    result = run_crawl(tmp_path, database, "-a", f"source={drafted}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_product_db_matches(database, truth)
    after = shop.hits()
    paths = {o["path"] for o in truth["offers"]}
    assert {p: after.get(p, 0) - probed.get(p, 0) for p in paths} == dict.fromkeys(paths, 0)  # no page fetched
    assert _store_api_hits(after) - _store_api_hits(probed) == 1  # 30 products: one page of 100


def test_a_closed_woocommerce_store_api_drafts_the_html_profile(tmp_path: Path) -> None:
    with ShopProcess(120, seed=5, throttle=("--woo-store-api", "closed")) as closed:
        truth: dict[str, Any] = closed.truth()["sections"]["woo"]
        drafted = tmp_path / "drafted.yaml"
        done = _recordhound(tmp_path, "profile", "draft", closed.url.rstrip("/") + truth["first_listing"],
                            "-o", str(drafted))
        assert done.returncode == 0, done.stderr[-3000:]
        document = yaml.safe_load(drafted.read_text())
        assert "platform" not in document and document["structured"] == "schema.org", drafted.read_text()
        assert document["title_rules"] == ["artist_title"] and "HTTP 401" in drafted.read_text()
        database = f"sqlite:///{tmp_path / 'html.sqlite3'}"
        result = run_crawl(tmp_path, database, "-a", f"source={drafted}")
        assert result.returncode == 0, result.stderr[-3000:]
        assert_product_db_matches(database, truth)
        assert _store_api_hits(closed.hits()) <= 2  # the draft's probes only


def test_a_profile_that_ignores_robots_txt_says_why_and_the_reason_is_logged(shop: ShopProcess, tmp_path: Path) -> None:
    truth: dict[str, Any] = shop.truth()["sections"]["market"]
    drafted = tmp_path / "drafted.yaml"
    done = _recordhound(tmp_path, "profile", "draft", shop.url.rstrip("/") + truth["first_listing"],
                        "--name", "permitted", "-o", str(drafted))
    assert done.returncode == 0, done.stderr[-3000:]
    document = yaml.safe_load(drafted.read_text())
    reason = "crawled with the shop's written permission"
    document["robots"] = {"obey": False, "reason": reason}
    drafted.write_text(yaml.safe_dump(document))
    before = shop.hits().get(RESERVED, 0)
    result = run_crawl(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite3'}", "-a", f"source={drafted}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert shop.hits().get(RESERVED, 0) == before + 1  # the page robots.txt disallows was fetched
    assert f"Not obeying robots.txt of {shop.url}" in result.stderr and reason in result.stderr


def _variants(shop: ShopProcess) -> list[dict[str, Any]]:
    """Every variant the Shopify-like store lists in its products.json, as a user reads them."""
    found: list[dict[str, Any]] = []
    for page in range(1, 100):
        products = shop.get_json(f"/shopify/products.json?page={page}")["products"]
        if not products:
            return found
        found += [variant for product in products for variant in product["variants"]]
    raise AssertionError("products.json never ends")


def test_shopify_offers_are_keyed_by_variant_id_even_when_skus_are_empty_or_repeated(
        shop: ShopProcess, tmp_path: Path, database_url: str) -> None:
    truth: dict[str, Any] = shop.truth()["sections"]["shopify"]
    variants = _variants(shop)
    skus = [v["sku"] for v in variants]
    assert "" in skus or None in skus, "the store has a variant without a SKU"
    assert any(skus.count(s) > 1 for s in skus if s), "the store has a SKU on more than one variant"
    assert sorted(o["external_id"] for o in truth["offers"]) == sorted(str(v["id"]) for v in variants)
    profile = tmp_path / "shopify.yaml"
    profile.write_text(yaml.safe_dump({
        "name": "shopify_variants", "base_url": shop.url.rstrip("/") + "/shopify/", "platform": "shopify",
        "start_urls": ["/shopify/collections/all"], "structured": "schema.org",
        "title_rules": ["artist_title_catno"], "price": {"default_currency": "EUR"}}))
    result = run_crawl(tmp_path, database_url, "-a", f"source={profile}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_product_db_matches(database_url, truth)
    assert result.stats.get("recordhound/errors", 0) == 0, result.stats
