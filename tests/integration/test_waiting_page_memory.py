"""A product page waits in Scrapy's scraper slot until its items are stored; once the catalog spider
has extracted its release, the page no longer holds its parsed tree or decoded text (most of its
memory), and anything that asks for them again still gets them. Pages from the demo shop over HTTP;
the release compared with the shop's truth."""

from __future__ import annotations

import gc
import json
import urllib.request
import weakref
from collections.abc import Iterator

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.project import get_project_settings
from scrapy.utils.test import get_crawler, get_reactor_settings

from recordhound.demo.process import ShopProcess
from recordhound.items import RawRelease
from recordhound.spiders.catalog import CatalogSpider, forget_parsed


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopProcess]:
    with ShopProcess(20, seed=11) as running:
        yield running


def _get(shop: ShopProcess, path: str) -> bytes:
    with urllib.request.urlopen(shop.url.rstrip("/") + path, timeout=30) as answer:
        return answer.read()


def _spider() -> CatalogSpider:
    settings = {**get_project_settings(), **get_reactor_settings()}  # nothing is downloaded
    crawler = get_crawler(CatalogSpider, settings_dict=settings)
    spider = CatalogSpider.from_crawler(crawler, source="demo")
    crawler.spider = spider
    return spider


def test_a_product_page_lets_go_of_its_tree_once_its_release_is_extracted(shop: ShopProcess) -> None:
    truth = json.loads(_get(shop, "/_truth.json"))["offers"][4]
    response = HtmlResponse(url=shop.url.rstrip("/") + truth["path"], body=_get(shop, truth["path"]), encoding="utf-8")
    text, tree = response.text, weakref.ref(response.selector)
    output = _spider().parse_product(response)
    release = next(output)  # the engine holds `response` until this item is stored
    gc.collect()
    assert isinstance(release, RawRelease)
    assert (release.external_id, release.title, release.year) == (truth["external_id"], truth["title"], str(truth["year"]))
    assert tree() is None  # nothing holds the parsed page any more
    assert response.text == text and response.css("h1.title::text").get("").strip() == truth["title"]  # parsed again on demand
    assert list(output) == []


def test_forget_parsed_knows_the_caches_of_scrapys_text_response() -> None:
    response = HtmlResponse(url="http://127.0.0.1:1/", body="<p>Déjà vu</p>".encode(), encoding="utf-8")
    tree, text = weakref.ref(response.selector), response.text
    forget_parsed(response)
    gc.collect()
    assert tree() is None  # Scrapy renamed its caches if this fails: forget_parsed would do nothing
    assert response.text == text and response.css("p::text").get() == "Déjà vu"
