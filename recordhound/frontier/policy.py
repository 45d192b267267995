"""What a crawl's settings and profile say the frontier should do, read once at open."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from recordhound.config import FrontierConfig, follow_enabled
from recordhound.frontier.politeness import HostLimiter, Limits, make_limiter, politeness_limits
from recordhound.frontier.retry import RetryPolicy
from recordhound.sources.profile import RecrawlSpec

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CrawlPolicy:
    retry: RetryPolicy
    limits: Limits = field(default_factory=Limits)
    recrawl: RecrawlSpec = field(default_factory=RecrawlSpec)
    follow: bool = False  # keep running, leasing pages as they come due (-a follow=true)
    crawl: str = ""  # the profile's name: the crawl id unless RECORDHOUND_CRAWL_ID says otherwise

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> CrawlPolicy:
        return cls(RetryPolicy.from_settings(settings))

    @classmethod
    def for_spider(cls, settings: BaseSettings, spider: Spider) -> CrawlPolicy:
        profile = getattr(spider, "profile", None)
        recrawl = getattr(profile, "recrawl", None) or RecrawlSpec()
        follow = follow_enabled(settings, getattr(spider, "follow", None))
        if follow and not recrawl.active:
            logger.warning("follow=true, but the profile has no `recrawl:` schedule: the crawl ends when it drains")
            follow = False
        return cls(getattr(spider, "retry_policy", None) or RetryPolicy.from_settings(settings),
                   politeness_limits(settings, profile), recrawl, follow,
                   profile.name if profile is not None else "")

    def limiter(self, config: FrontierConfig, settings: BaseSettings) -> HostLimiter | None:
        """None when nothing is limited and nothing is learned (adaptive off): the gate takes any request."""
        return make_limiter(config, settings) if self.limits.active or self.limits.learns else None
