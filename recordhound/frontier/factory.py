"""Build the frontier backend a crawl is configured for."""

from __future__ import annotations

from recordhound.config import FrontierConfig
from recordhound.frontier.backend import FrontierBackend


def make_backend(config: FrontierConfig, crawl: str, timeout: float | None = None) -> FrontierBackend:
    """``timeout``: the longest one call may wait (default: the reactor's bound,
    ``RECORDHOUND_FRONTIER_CALL_TIMEOUT_SECONDS``); threads and the CLI may wait longer."""
    seconds = config.call_timeout_seconds if timeout is None else timeout
    if config.redis_url:
        from recordhound.frontier.redis import RedisFrontier
        from recordhound.redis_client import crawl_prefix

        return RedisFrontier(config.redis_url, crawl_prefix(config.redis_prefix, crawl), seconds)
    from recordhound.frontier.sqlite import SqliteFrontier

    return SqliteFrontier(config.path_template.format(crawl=crawl), seconds)
