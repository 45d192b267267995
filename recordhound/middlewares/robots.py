"""Scrapy's ``RobotsTxtMiddleware``, reading a host's robots.txt once per process: the frontier
already downloaded the shop's own when it opened (for its Crawl-delay, ``recordhound.robots``),
so its requests are checked against that copy instead of a second download. Other hosts, or a
robots.txt the frontier could not read, go through Scrapy's middleware as usual."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object

from recordhound.robots import known

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser


class ReadOnceRobotsTxtMiddleware(RobotsTxtMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.read: dict[str, RobotParser] = {}  # netloc -> the parser of the frontier's copy

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        netloc = urlparse_cached(request).netloc
        body = None if request.meta.get("dont_obey_robotstxt") else known(self.crawler, netloc)
        if body is None:
            return await super().process_request(request)
        if netloc not in self.read:
            parser = load_object(self.crawler.settings.get("ROBOTSTXT_PARSER"))
            self.read[netloc] = build_from_crawler(parser, self.crawler, body)
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("recordhound/robots/read_once")
        self.process_request_2(self.read[netloc], request)
        return None
