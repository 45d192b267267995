"""Fetch a listing page and a few of its product pages with Scrapy's downloader, outside any crawl
(no frontier, no pipelines): what ``recordhound profile draft`` learns from."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response, TextResponse
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

MAX_LISTINGS = 50
COPIED_SETTINGS = ("USER_AGENT", "DOWNLOAD_TIMEOUT", "DEFAULT_REQUEST_HEADERS", "ROBOTSTXT_OBEY", "TWISTED_REACTOR")


@dataclass
class Fetched:
    listing: TextResponse | None = None
    products: list[TextResponse] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    probes: dict[str, Response] = field(default_factory=dict)  # probe URL → its answer, whatever its status


class _SampleSpider(scrapy.Spider):
    name = "recordhound-sample"

    def __init__(self, listing: str, products: list[str], pick: Callable[[TextResponse], list[str]],
                 samples: int, fetched: Fetched, follow: Callable[[TextResponse], list[str]] | None = None,
                 probe: Callable[[TextResponse], list[str]] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.listing, self.product_urls, self.pick, self.samples, self.fetched = listing, products, pick, samples, fetched
        self.follow, self.probe = follow, probe
        self.wanted = max(samples, len(products))
        self.requested: set[str] = set()
        self.listings = 0

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.listing, callback=self.on_listing, errback=self.on_error)

    def on_listing(self, response: Response) -> Iterator[scrapy.Request]:
        if not self._text(response):
            return
        assert isinstance(response, TextResponse)
        self.fetched.listing = self.fetched.listing or response
        self.listings += 1
        first = not self.requested
        if first and self.probe is not None:
            for url in self.probe(response):  # any answer is kept: a 401 says as much as a 200
                yield scrapy.Request(url, callback=self.on_probe, errback=self.on_probe_error, dont_filter=True,
                                     meta={"handle_httpstatus_all": True, "dont_retry": True})
        candidates = [*self.product_urls, *self.pick(response)] if first else self.pick(response)
        urls = [u for u in dict.fromkeys(candidates) if u not in self.requested][:self.wanted - len(self.requested)]
        self.requested.update(urls)
        for priority, url in enumerate(reversed(urls)):
            yield scrapy.Request(url, callback=self.on_product, errback=self.on_error, priority=priority + 10)
        if self.follow is not None and len(self.requested) < self.wanted and self.listings < MAX_LISTINGS:
            for url in self.follow(response)[:1]:  # one next page at a time, until there are enough
                yield scrapy.Request(url, callback=self.on_listing, errback=self.on_error)

    def on_product(self, response: Response) -> None:
        if self._text(response):
            assert isinstance(response, TextResponse)
            self.fetched.products.append(response)

    def on_probe(self, response: Response) -> None:
        self.fetched.probes[response.url] = response

    def on_probe_error(self, failure: Failure) -> None:
        """A probe that did not answer: the draft goes on without it."""

    def _text(self, response: Response) -> bool:
        if not isinstance(response, TextResponse):
            self.fetched.errors.append(f"{response.url}: not a text page ({response.headers.get('Content-Type')!r})")
            return False
        return True

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # Scrapy sets it on errback failures
        self.fetched.errors.append(f"{request.url}: {failure.getErrorMessage() or type(failure.value).__name__}")


def fetch_samples(listing: str, products: list[str], pick: Callable[[TextResponse], list[str]],
                  project: BaseSettings, samples: int = 3,
                  follow: Callable[[TextResponse], list[str]] | None = None,
                  probe: Callable[[TextResponse], list[str]] | None = None) -> Fetched:
    """The listing, then ``products`` (or the first ``samples`` that ``pick`` finds on it, and on
    the next listing pages that ``follow`` finds while there are not enough), and the URLs ``probe``
    names from the listing (a platform's API), kept in ``Fetched.probes`` whatever they answer."""
    settings = {name: project[name] for name in COPIED_SETTINGS if project.get(name) is not None}
    settings.update({"LOG_ENABLED": False, "LOG_INSTALL_ROOT_HANDLER": False, "TELNETCONSOLE_ENABLED": False,
                     "RETRY_TIMES": 1})
    fetched = Fetched()
    process = CrawlerProcess(settings)
    process.crawl(_SampleSpider, listing=listing, products=products, pick=pick, samples=samples, fetched=fetched,
                  follow=follow, probe=probe)
    process.start()
    fetched.products.sort(key=lambda r: ([*products, r.url].index(r.url)))
    return fetched
