"""Scrapy's ``RobotsTxtMiddleware``, reading a host's robots.txt once per process: the frontier
already downloaded the shop's own when it opened (for its Crawl-delay, ``recordhound.robots``),
so the middleware parses that copy instead of fetching it a second time. Other hosts, or a
robots.txt the frontier could not read, are fetched by Scrapy's middleware as usual."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler

from recordhound.robots import known

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.robotstxt import RobotParser


class ReadOnceRobotsTxtMiddleware(RobotsTxtMiddleware):
    async def robot_parser(self, request: Request) -> RobotParser | None:
        netloc = urlparse_cached(request).netloc
        if netloc not in self._parsers and (body := known(self.crawler, netloc)) is not None:
            # Scrapy 2.19's own cache (a private attribute): a parser here is never downloaded again
            self._parsers[netloc] = build_from_crawler(self._parserimpl, self.crawler, body)
            self._stats.inc_value("recordhound/robots/reused")
        return await super().robot_parser(request)
