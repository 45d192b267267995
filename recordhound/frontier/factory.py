"""Build the frontier backend a crawl is configured for."""

from __future__ import annotations

from recordhound.config import FrontierConfig
from recordhound.frontier.backend import FrontierBackend


def make_backend(config: FrontierConfig, crawl: str) -> FrontierBackend:
    if config.redis_url:
        from recordhound.frontier.redis import RedisFrontier

        return RedisFrontier(config.redis_url, f"{config.redis_prefix}:{crawl}")
    from recordhound.frontier.sqlite import SqliteFrontier

    return SqliteFrontier(config.path_template.format(crawl=crawl))
