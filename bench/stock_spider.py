"""The stock-Scrapy baseline of the crawl benches: a plain spider a user would write for the demo shop.

    scrapy runspider bench/stock_spider.py -a base_url=http://127.0.0.1:PORT/

Same links and fields as the bundled ``demo`` profile (its CSS/XPath selectors, written out by hand),
stock scheduler and dupefilter, the same Scrapy settings as recordhound's (concurrency, robots.txt,
no retries, no cookies); items are plain dicts and go nowhere (no pipeline, no feed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response

SETTINGS: dict[str, Any] = {
    "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
    "CONCURRENT_ITEMS": 8,
    "DOWNLOAD_TIMEOUT": 30,
    "RETRY_ENABLED": False,
    "COOKIES_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "USER_AGENT": "recordhound/0.1 (+catalog crawler)",
}
LINKS = (("a.next::attr(href)", 30), ("a.style-link::attr(href)", 20), ("a.product-link::attr(href)", 10))


class StockDemoSpider(scrapy.Spider):
    name = "stock_demo"
    custom_settings = SETTINGS

    def __init__(self, base_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [base_url.rstrip("/") + "/catalog?page=1", base_url.rstrip("/") + "/styles"]

    def parse(self, response: Response) -> Iterator[Any]:
        for css, priority in LINKS:
            for href in response.css(css).getall():
                callback = self.parse_product if priority == 10 else self.parse
                yield response.follow(href, callback=callback, priority=priority)

    def parse_product(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {
            "external_id": response.css(".product::attr(data-sku)").get(),
            "title": response.css("h1.title::text").get(),
            "artists": response.css(".artists a.artist::text").getall()
            or (response.css(".artists .joined::text").get() or "").split(" / "),
            "label": response.css(".label::text").get(),
            "catalog_number": response.xpath('//span[@class="catno"]/text()').get(),
            "year": response.css(".year::text").get(),
            "styles": response.css("ul.styles li::text").getall(),
            "price": response.css(".offer .price::text").get(),
            "in_stock": response.css(".stock::attr(data-in-stock)").get(),
        }
