"""Say at start-up which frontier, product database and review queue a crawl uses.

One INFO line when the engine starts, e.g.::

    recordhound: frontier embedded (.recordhound/frontier/demo.sqlite3), store sqlite
    (recordhound.sqlite3), review queue embedded (.recordhound/review.sqlite3)

Passwords in URLs are masked.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from scrapy import signals

from recordhound.config import FrontierConfig, ReviewConfig, StoreConfig

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def _redis(url: str) -> str:
    """``redis://:secret@host:6379/0`` → ``redis://***@host:6379/0``."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    return f"{scheme}{sep}***@{host}" if at and credentials else url


def _relative(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def describe_frontier(config: FrontierConfig, crawl: str) -> str:
    if config.backend == "redis":
        return f"redis ({_redis(config.redis_url)}, prefix {config.redis_prefix})"
    return f"embedded ({_relative(config.path_template.replace('{crawl}', crawl))})"


def describe_store(config: StoreConfig) -> str:
    """Read without SQLAlchemy, which a crawler never loads (its writer process owns the database)."""
    from recordhound.preflight import safe_url

    scheme, _, rest = config.database_url.partition("://")
    backend = scheme.split("+", 1)[0]
    if backend == "sqlite":
        path = rest.split("?", 1)[0]
        path = path[1:] if path.startswith("/") else path
        return f"sqlite ({_relative(path) if path not in ('', ':memory:') else ':memory:'})"
    return f"{backend} ({safe_url(config.database_url)})"


def describe_review(config: ReviewConfig) -> str:
    if config.backend == "redis":
        return f"redis ({_redis(config.redis_url)}, prefix {config.redis_prefix})"
    return f"embedded ({_relative(config.path)})"


class BackendsBanner:
    def __init__(self, frontier: FrontierConfig, store: StoreConfig, review: ReviewConfig,
                 store_enabled: bool = True) -> None:
        self.frontier, self.store, self.review = frontier, store, review
        self.store_enabled = store_enabled

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BackendsBanner:
        settings = crawler.settings
        banner = cls(FrontierConfig.from_settings(settings), StoreConfig.from_settings(settings),
                     ReviewConfig.from_settings(settings), settings.getbool("RECORDHOUND_STORE_ENABLED"))
        crawler.signals.connect(banner.spider_opened, signal=signals.spider_opened)
        return banner

    def spider_opened(self, spider: Spider) -> None:
        profile = getattr(spider, "profile", None)
        crawl = self.frontier.crawl_id or (profile.name if profile is not None else spider.name)
        store = describe_store(self.store) if self.store_enabled else "off (RECORDHOUND_STORE_ENABLED=false)"
        logger.info("recordhound: frontier %s, store %s, review queue %s", describe_frontier(self.frontier, crawl),
                    store, describe_review(self.review))
