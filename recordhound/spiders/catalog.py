"""The catalog spider: a producer of requests driven by a source profile.

``scrapy crawl catalog -a source=demo [-a base_url=http://127.0.0.1:PORT/]``
It keeps no lists of URLs or results: listings yield requests, product pages yield items.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import urljoin, urlparse

import scrapy
from scrapy.http import Response, TextResponse

from recordhound.errors import record_error
from recordhound.exceptions import ConfigError, ProfileError
from recordhound.extensions.health import PRODUCT_PAGES_STAT, SpidermonToDebug
from recordhound.frontier.registry import KIND_META, report_failure
from recordhound.frontier.retry import RetryPolicy
from recordhound.items import Unchanged
from recordhound.middlewares.render import RENDER_META, enable_rendering
from recordhound.sources import Profile, load_profile
from recordhound.sources.extract import extract_links, extract_release, structured_data
from recordhound.sources.schema import with_base_url

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)


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
        if profile.render:
            try:
                enable_rendering(crawler.settings, profile)
            except ConfigError as exc:
                logger.critical("Not crawling: %s", exc)
                raise
        spider = super().from_crawler(crawler, *args, profile=profile, **kwargs)
        spider.retry_policy = RetryPolicy.from_settings(crawler.settings, profile.retry)
        if not any(isinstance(f, SpidermonToDebug) for f in spider.logger.logger.filters):
            spider.logger.logger.addFilter(SpidermonToDebug())  # crawl health is reported in one line
        logger.info("recordhound: crawling source %s (profile %s)", source, profile.path)  # `recordhound jobs` reads it
        return spider

    async def start(self) -> AsyncIterator[Any]:
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
        yield extract_release(response, self.profile, data)

    def on_error(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]  # Scrapy sets it on errback failures
        assert self.crawler is not None and self.retry_policy is not None
        problem = self.retry_policy.classify(failure)
        retry_in = report_failure(self.crawler, request, problem)
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



def _undecodable(response: Response) -> str | None:
    """Why the page's bytes are not text in its own encoding, or None."""
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
