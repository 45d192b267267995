"""The catalog spider: a producer of requests driven by a source profile.

``scrapy crawl catalog -a source=demo [-a base_url=http://127.0.0.1:PORT/]``
It keeps no lists of URLs or results: listings yield requests, product pages yield items.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import urljoin, urlparse

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse

from recordhound.errors import record_error
from recordhound.exceptions import ConfigError, CutOffError, FieldError, ProfileError
from recordhound.extensions.health import PRODUCT_PAGES_STAT, ROBOTS_FORBIDDEN_STAT, SpidermonToDebug
from recordhound.frontier.dupefilter import FINGERPRINT_SALT_META
from recordhound.frontier.recrawl import LASTMODS, READS
from recordhound.frontier.registry import KIND_META, held_lease, report_failure
from recordhound.frontier.retry import TAKEN_BACK, Problem, RetryPolicy
from recordhound.items import Unchanged
from recordhound.middlewares.render import RENDER_META, enable_rendering
from recordhound.robots import install_log_filter, known, sitemap_lines
from recordhound.sources import Profile, load_profile
from recordhound.sources.extract import extract_links, extract_release, structured_data
from recordhound.sources.profile import SitemapSpec
from recordhound.sources.schema import with_base_url
from recordhound.sources.shopify import (next_page, product_json_url, product_page_url, products_json_url,
                                         release_of)
from recordhound.sources import woocommerce
from recordhound.sources.sitemaps import MAX_SITEMAP_BYTES, MOVED, STANDS, read_sitemap, since, wanted

from twisted.python.failure import Failure

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
MOVED_KIND = "sitemap_moved"  # a product fetched again because its sitemap lastmod moved (no schedule of its own)


class CatalogSpider(scrapy.Spider):
    name = "catalog"

    def __init__(self, *args: Any, profile: Profile | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert profile is not None, "build CatalogSpider with from_crawler"
        self.profile = profile
        self.retry_policy: RetryPolicy | None = None  # set by from_crawler (the scheduler uses it too)
        self.allowed_domains = list(profile.allowed_domains) or [urlparse(profile.base_url).hostname or ""]

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> CatalogSpider:
        source = kwargs.pop("source", None) or "demo"
        try:
            profile = load_profile(source, crawler.settings.getlist("RECORDHOUND_PROFILES_DIRS"))
        except ProfileError as exc:
            logger.critical("Not crawling: %s", exc)
            raise
        base_url = kwargs.pop("base_url", None)
        if base_url:
            profile = with_base_url(profile, base_url)
        if not profile.robots.obey:
            crawler.settings.set("ROBOTSTXT_OBEY", False, priority="spider")
            logger.warning("Not obeying robots.txt of %s (profile %s): %s", profile.base_url, profile.path,
                           profile.robots.reason)
        if profile.render:
            try:
                enable_rendering(crawler.settings, profile)
            except ConfigError as exc:
                logger.critical("Not crawling: %s", exc)
                raise
        spider = super().from_crawler(crawler, *args, profile=profile, **kwargs)
        spider.retry_policy = RetryPolicy.from_settings(crawler.settings, profile.retry)
        install_log_filter()  # an unreadable robots.txt: one warning line, no traceback
        if not any(isinstance(f, SpidermonToDebug) for f in spider.logger.logger.filters):
            spider.logger.logger.addFilter(SpidermonToDebug())  # crawl health is reported in one line
        logger.info("recordhound: crawling source %s (profile %s)", source, profile.path)  # `recordhound jobs` reads it
        return spider

    async def start(self) -> AsyncIterator[Any]:
        if self.profile.platform == "shopify" and self.profile.sitemap is None:
            yield scrapy.Request(products_json_url(self.profile.base_url, 1), callback=self.parse_products_json,
                                 errback=self.on_error, meta=self._meta("listing", "start"))
            return
        if self.profile.platform == "woocommerce":
            yield scrapy.Request(woocommerce.store_api_url(self.profile.base_url, 1), callback=self.parse_store_api,
                                 errback=self.on_error, meta=self._meta("listing", "start"))
            return
        if self.profile.sitemap is not None:
            for request in self._sitemap_starts(self.profile.sitemap):
                yield request
            if self.profile.sitemap.only or self.profile.platform == "shopify":
                return
        for url in self.profile.start_urls:
            yield scrapy.Request(urljoin(self.profile.base_url, url), callback=self.parse_listing,
                                 errback=self.on_error, meta=self._meta("listing", "start"))

    def parse_listing(self, response: Response) -> Iterator[scrapy.Request]:
        if response.status == 304:
            return  # a recheck: unchanged, so are its links (they are in the frontier already)
        if not self._is_text(response):
            return
        for kind, link in self.profile.links.items():
            callback = self.parse_product if kind == "product" else self.parse_listing
            for url in extract_links(response, link.selectors):
                yield scrapy.Request(url, callback=callback, errback=self.on_error,
                                     priority=link.priority, meta=self._meta(kind))

    def _sitemap_starts(self, spec: SitemapSpec) -> Iterator[scrapy.Request]:
        """The profile's sitemaps, or robots.txt's ``Sitemap:`` lines (the copy the frontier read
        for its Crawl-delay: robots.txt is downloaded once a process; else a request for it)."""
        assert self.crawler is not None
        robots = None if spec.urls else known(self.crawler, urlparse(self.profile.base_url).netloc)
        if spec.urls or robots is not None:
            yield from self._sitemaps(self.profile.base_url, spec.urls or sitemap_lines(robots or b""))
            return
        yield scrapy.Request(urljoin(self.profile.base_url, "/robots.txt"), callback=self.parse_robots,
                             errback=self.on_error, meta=self._meta("listing"))

    def parse_robots(self, response: Response) -> Iterator[scrapy.Request]:
        if response.status == 304 or not self._is_text(response):
            return
        yield from self._sitemaps(response.url, sitemap_lines(response.body))

    def _sitemaps(self, base: str, urls: Iterable[str]) -> Iterator[scrapy.Request]:
        """``download_maxsize``: a sitemap sent gzipped (``Content-Encoding``) is unzipped by Scrapy's
        compression middleware, up to this size; a ``.gz`` body by ``read_sitemap``, to the same."""
        for url in urls:
            yield scrapy.Request(urljoin(base, url), callback=self.parse_sitemap, errback=self.on_error,
                                 meta={**self._meta("listing"), "download_maxsize": MAX_SITEMAP_BYTES})

    def parse_sitemap(self, response: Response) -> Iterator[scrapy.Request]:
        """A sitemap index leads to sitemaps; a urlset to product pages: those new to it, and again
        those whose ``lastmod`` moved since its last read (kept in its recheck state)."""
        assert self.profile.sitemap is not None and self.crawler is not None
        if response.status == 304:
            return
        try:
            found = read_sitemap(response)
        except FieldError as exc:  # cut off: tried again (a download cut short); not a sitemap: failed
            self._failed(response.request, Problem("sitemap", str(exc), isinstance(exc, CutOffError)))
            return
        if found.index:
            yield from self._sitemaps(response.url, [entry.url for entry in found.entries])
            return
        held = held_lease(self.crawler, response.request)
        last_read = held.state.get(LASTMODS) if held is not None else None
        products = [entry for entry in found.entries if wanted(self.profile.sitemap, entry.url)]
        read = f"{response.url} {held.state.get(READS, 0) + 1}" if held is not None else None
        if held is not None:
            held.keep[LASTMODS] = {entry.url: entry.lastmod for entry in products if entry.lastmod}
            held.keep[READS] = held.state.get(READS, 0) + 1
        for entry in products:
            if (change := since(last_read, entry)) != STANDS:
                yield self._sitemap_product(entry.url, read if change == MOVED else None)

    def _sitemap_product(self, url: str, again_in: str | None) -> scrapy.Request:
        """``again_in``: its lastmod moved in this read of the sitemap: fetched once more, once per read
        (its fingerprint salted with the read: a read expanded again after a kill queues it once), and
        never rechecked on its own (the page's own request, if it has a schedule, keeps it)."""
        shopify, product = self.profile.platform == "shopify", self.profile.links.get("product")
        meta = self._meta(MOVED_KIND, render_kind="product") if again_in else self._meta("product")
        if again_in:
            meta[FINGERPRINT_SALT_META] = again_in
        return scrapy.Request(product_json_url(url) if shopify else url,
                              callback=self.parse_product_json if shopify else self.parse_product,
                              errback=self.on_error, priority=product.priority if product else 10, meta=meta)

    def parse_product_json(self, response: Response) -> Iterator[Any]:
        """``platform: shopify`` with a sitemap: one product from its ``/products/<handle>.json``."""
        assert self.crawler is not None and self.crawler.stats is not None
        self.crawler.stats.inc_value(PRODUCT_PAGES_STAT)
        if response.status == 304:
            yield Unchanged(self.profile.name, product_page_url(response.url))
            return
        if not self._is_text(response):
            return
        product = self._json(response, "product_json", "not a product .json page", "product", dict,
                             "no 'product' object in the page")
        if product is not None:
            yield release_of(product, self.profile.base_url, self.profile.name)

    def parse_products_json(self, response: Response) -> Iterator[Any]:
        """``platform: shopify``: one page of /products.json: its products, then the next page."""
        assert self.crawler is not None and self.crawler.stats is not None
        if response.status == 304 or not self._is_text(response):
            return
        products = self._json(response, "products_json", "not a products.json page", "products", list,
                              "no 'products' list in the page")
        if products is None:
            return
        for product in (p for p in products if isinstance(p, dict)):
            self.crawler.stats.inc_value(PRODUCT_PAGES_STAT)
            yield release_of(product, self.profile.base_url, self.profile.name)
        if products:
            yield scrapy.Request(products_json_url(self.profile.base_url, next_page(response.url)),
                                 callback=self.parse_products_json, errback=self.on_error,
                                 meta=self._meta("pagination"))

    def parse_store_api(self, response: Response) -> Iterator[Any]:
        """``platform: woocommerce``: one page of the Store API's products, then the next page."""
        assert self.crawler is not None and self.crawler.stats is not None
        if response.status == 304 or not self._is_text(response):
            return
        products = self._json(response, "store_api", "not a Store API page", None, list, "not a list of products")
        if products is None:
            return
        for product in (p for p in products if isinstance(p, dict)):
            self.crawler.stats.inc_value(PRODUCT_PAGES_STAT)
            yield woocommerce.release_of(product, self.profile.base_url, self.profile.name)
        following = woocommerce.next_page(response.url, len(products))
        if following is not None:
            yield scrapy.Request(woocommerce.store_api_url(self.profile.base_url, following),
                                 callback=self.parse_store_api, errback=self.on_error, meta=self._meta("pagination"))

    def _json(self, response: Response, error: str, unreadable: str, key: str | None, kind: type,
              wrong: str) -> Any:
        """The JSON page's value (under ``key``), or None with the error recorded against the page."""
        assert self.crawler is not None
        try:
            value = json.loads(response.text)
            forget_parsed(response)  # read: the text is not needed while the page's items are stored
            value = value.get(key) if key is not None else value
        except (ValueError, AttributeError) as exc:
            record_error(self.crawler, error, response.url, f"{unreadable}: {exc}")
            return None
        if not isinstance(value, kind):
            record_error(self.crawler, error, response.url, wrong)
            return None
        return value

    def _meta(self, kind: str, render_kind: str | None = None) -> dict[str, Any]:
        """Plain JSON only: requests are stored in the frontier."""
        meta: dict[str, Any] = {KIND_META: kind}
        spec = self.profile.render.get(render_kind or kind)
        if spec is not None:
            meta[RENDER_META] = spec.meta()
        return meta

    def parse_product(self, response: Response) -> Iterator[Any]:
        assert self.crawler is not None and self.crawler.stats is not None
        self.crawler.stats.inc_value(PRODUCT_PAGES_STAT)  # crawl health: product pages must yield items
        if response.status == 304:
            yield Unchanged(self.profile.name, response.url)  # a recheck: the offer was seen again
            return
        if not self._is_text(response):
            return
        if (problem := _undecodable(response)) is not None:  # never store U+FFFD as if it were text
            assert self.crawler is not None
            record_error(self.crawler, "invalid_encoding", response.url, problem)
            return
        data = structured_data(response, self.profile)
        for problem in data.problems:  # the selectors and the other syntaxes still have their say
            record_error(self.crawler, "structured_data", response.url, problem)
        release = extract_release(response, self.profile, data)
        forget_parsed(response)  # the page now waits for its item to be stored
        yield release

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # Scrapy sets it on errback failures
        assert self.crawler is not None and self.retry_policy is not None
        problem = self.retry_policy.classify(failure)
        if _forbidden_by_robots(failure):  # a page the shop asked not to be crawled: no error
            problem = Problem("robots_forbidden", "forbidden by the shop's robots.txt", False)
            if report_failure(self.crawler, request, problem) is not TAKEN_BACK:
                self.crawler.stats.inc_value(ROBOTS_FORBIDDEN_STAT)
            return
        self._failed(request, problem)

    def _failed(self, request: scrapy.Request | None, problem: Problem) -> None:
        """The request failed: tried again later while the problem is transient and attempts are
        left, else recorded as the crawl's problem (and a dead letter in the frontier)."""
        assert self.crawler is not None and self.crawler.stats is not None and request is not None
        retry_in = report_failure(self.crawler, request, problem)
        if retry_in is TAKEN_BACK:  # queued again in the store: its next fetch gets the one outcome
            logger.debug("Not counted: %s failed (%s) after the store took its lease back", request.url, problem.reason)
            return
        if retry_in is None:
            record_error(self.crawler, problem.kind, request.url, problem.message)
            return
        self.crawler.stats.inc_value(f"recordhound/retry/{problem.kind}")
        logger.debug("Retrying %s in %.1f s: %s", request.url, retry_in, problem.reason)

    def _is_text(self, response: Response) -> TypeGuard[TextResponse]:
        if isinstance(response, TextResponse):
            return True
        assert self.crawler is not None
        record_error(self.crawler, "not_html", response.url, "response is not a text page")
        return False


def forget_parsed(response: Response) -> None:
    """Let go of the page's decoded text and parsed tree, which the response caches. A page waits in
    Scrapy's scraper slot until its items are stored (back-pressure lets a thousand items wait), and
    its tree is most of what it holds: about 20 KB for the demo shop's 0.7 KB product page, more for a
    real shop's (docs/benchmarks.md). Whatever asks for them again has them decoded and parsed again."""
    for cached in ("_cached_selector", "_cached_ubody"):  # Scrapy's TextResponse caches (a test holds the names)
        if getattr(response, cached, None) is not None:
            setattr(response, cached, None)


def _forbidden_by_robots(failure: Failure) -> bool:
    return isinstance(failure.value, IgnoreRequest) and "robots.txt" in str(failure.value)


def _undecodable(response: Response) -> str | None:
    """Why the page's bytes are not text in its own encoding, or None."""
    if isinstance(response, TextResponse) and "\ufffd" not in response.text:
        return None  # decoded (for the selectors) with every bad byte replaced by U+FFFD: none was
    encoding = getattr(response, "encoding", None) or "utf-8"
    try:
        response.body.decode(encoding)
    except UnicodeDecodeError as exc:
        bad = response.body[exc.start:exc.end + 2]
        return (f"the page has bytes that are not valid {encoding} at offset {exc.start} ({bad!r}); "
                f"not stored, so no text is written with replacement characters")
    except LookupError:
        return None
    return None
