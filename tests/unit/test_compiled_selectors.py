"""Compiled selectors return what parsel's ``.css()``/``.xpath()`` + ``.getall()`` return.

The expected strings come from parsel itself (the library a plain spider uses), for a fixed list
of selectors over pages of the kinds recordhound meets: HTML (the demo shop's listing and product
pages, a page with music markup and odd content), XML (a sitemap) and an element's own matches.
"""

from __future__ import annotations

import gc
import sys

import pytest
from parsel import Selector
from scrapy.http import HtmlResponse, JsonResponse, XmlResponse

from recordhound.demo.catalog import Catalog
from recordhound.demo.site import build_site
from recordhound.sources.extract import compiled, strings

ODD_PAGE = b"""<!DOCTYPE html><html><head><title>Odd &amp; ends</title>
<meta property="og:price:amount" content="12.50"><script>var x = "<b>";</script></head>
<body><div class="product  main card" id="p1" data-sku=" DR-1 ">Caf\xc3\xa9 <b>bold</b> tail<!-- a comment -->
<span class="price">\xe2\x82\xac 9,99</span><span class="price"></span><br/>
<ul><li>One</li><li class="x">Two <i>2</i></li><li>  </li></ul><p>unclosed <p>second
<table><tr><td>A</td><td>B</td></tr></table></div></body></html>"""

SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://a/1</loc>
<lastmod>2026-01-02</lastmod></url><url><loc>http://a/2</loc></url></urlset>"""

HTML_QUERIES = [
    ("css", "title::text"), ("css", "a::attr(href)"), ("css", "a"), ("css", "li"), ("css", "li::text"),
    ("css", ".product::attr(data-sku)"), ("css", "div.product.card"), ("css", ".price::text"),
    ("css", "meta[property='og:price:amount']::attr(content)"), ("css", "ul li:nth-child(2) *::text"),
    ("css", "p"), ("css", "td:last-child::text"), ("css", "script::text"), ("css", "nothing-here"),
    ("css", "h1.title::text"), ("css", ".artists a.artist::text"), ("css", "ul.styles li::text"),
    ("css", "a.next::attr(href)"), ("css", "a.product-link::attr(href)"), ("css", "html"),
    ("xpath", "//span[@class='catno']/text()"), ("xpath", "//comment()"), ("xpath", "count(//li)"),
    ("xpath", "boolean(//li)"), ("xpath", "boolean(//nothing)"), ("xpath", "string(//title)"),
    ("xpath", "//li[re:test(., '^T')]//text()"), ("xpath", "//div[has-class('card')]/@id"),
    ("xpath", "//@class"), ("xpath", "normalize-space(//div)"), ("xpath", "sum(//nothing)"),
    ("xpath", "set:distinct(//li/@class)"), ("xpath", "//li[1]/following-sibling::li/text()"),
]


@pytest.fixture(scope="module")
def pages() -> list[HtmlResponse]:
    site = build_site(Catalog(30, seed=3))
    paths = ["/catalog?page=1", "/styles", next(p for p in site if p.startswith("/release/"))]
    pages = [HtmlResponse("http://127.0.0.1:8070" + p, body=site[p].body, headers={"Content-Type": site[p].content_type})
             for p in paths]
    return pages + [HtmlResponse("http://127.0.0.1/odd", body=ODD_PAGE, encoding="utf-8")]


@pytest.mark.parametrize(("kind", "query"), HTML_QUERIES)
def test_html_pages_give_what_parsel_gives(pages: list[HtmlResponse], kind: str, query: str) -> None:
    for page in pages:
        expected = (page.css(query) if kind == "css" else page.xpath(query)).getall()
        assert strings(page.selector, kind, query) == expected, (page.url, query)


@pytest.mark.parametrize(("kind", "query"), [("xpath", "//*[local-name()='loc']/text()"), ("css", "loc::text"),
                                             ("xpath", "//*[local-name()='url']"), ("css", "*")])
def test_xml_gives_what_parsel_gives(kind: str, query: str) -> None:
    page = XmlResponse("http://a/sitemap.xml", body=SITEMAP)
    page.selector.remove_namespaces()
    expected = (page.css(query) if kind == "css" else page.xpath(query)).getall()
    assert strings(page.selector, kind, query) == expected


def test_matches_inside_an_element_are_relative_to_it() -> None:
    page = HtmlResponse("http://127.0.0.1/odd", body=ODD_PAGE, encoding="utf-8")
    for element in page.css("li"):
        for kind, query in (("css", "::text"), ("css", "i::text"), ("xpath", "./text()"), ("xpath", "@class")):
            expected = (element.css(query) if kind == "css" else element.xpath(query)).getall()
            assert strings(element, kind, query) == expected
    text_node = page.css("li::text")[0]
    assert strings(text_node, "xpath", "./b") == text_node.xpath("./b").getall() == []


@pytest.mark.parametrize("query", ["//li[", "count(", "//x:y"])
def test_a_broken_xpath_is_a_value_error_naming_the_query(query: str) -> None:
    page = HtmlResponse("http://127.0.0.1/odd", body=ODD_PAGE, encoding="utf-8")
    with pytest.raises(ValueError, match="XPath error") as raised:
        strings(page.selector, "xpath", query)
    with pytest.raises(ValueError, match="XPath error"):
        page.xpath(query)
    assert query in str(raised.value)


def test_a_json_page_is_refused_as_parsel_refuses_it() -> None:
    response = JsonResponse(url="http://shop.test/p/1", body=b'{"title": "x"}')
    with pytest.raises(ValueError, match="json"):
        response.css("h1::text").getall()
    with pytest.raises(ValueError, match="json"):
        strings(response.selector, "css", "h1::text")


CALLS = 2000  # evaluations of each cached selector (a crawl makes millions)


@pytest.mark.parametrize(("kind", "query"), HTML_QUERIES)
def test_a_cached_selector_holds_no_more_memory_the_more_it_runs(pages: list[HtmlResponse], kind: str,
                                                               query: str) -> None:
    """A compiled lxml XPath whose namespaces name an EXSLT module that libexslt implements (parsel's
    ``set:``) kept ~100 bytes per call in its context (lxml 6.2, libxml2 2.14): about 12 calls a page,
    1.2 million blocks (~120 MB) held by the end of a crawl of the 100,000-release demo shop."""
    root = pages[2].selector.root
    select = compiled(kind, query)
    for _ in range(50):
        select(root)
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(CALLS):
        select(root)
    gc.collect()
    assert sys.getallocatedblocks() - before < CALLS // 20, f"{query}: memory held grows with every call"
