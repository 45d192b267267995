"""Connections to Redis: one server, or a Redis Cluster (``redis+cluster://`` / ``rediss+cluster://``).

Every key of one crawl carries the crawl's hash tag (``PREFIX:{crawl}:...``), so all of them live in
one hash slot of a cluster and the Lua scripts that build key names from a prefix stay legal there.
A cluster client is typed as ``redis.Redis``: it takes the same commands (``RedisCluster`` routes each
one, scripts included, to the node that holds its keys' slot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import redis

CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
SCHEMES = ("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)


def is_cluster(url: str) -> bool:
    return url.startswith(CLUSTER_SCHEMES)


def connect(url: str, **options: Any) -> redis.Redis:
    """A client for ``url``; ``options`` are redis-py's (timeouts, retry, connect hook)."""
    import redis  # here, not at the top: an embedded crawl checks its URL's scheme without loading redis-py

    if is_cluster(url):
        from redis.cluster import RedisCluster

        return cast(redis.Redis, RedisCluster.from_url(url.replace("+cluster", "", 1), **options))
    return redis.Redis.from_url(url, **options)


def crawl_prefix(prefix: str, crawl: str) -> str:
    """The prefix of every key of one crawl: the crawl name is its hash tag."""
    return f"{prefix}:{{{crawl}}}"


def crawl_of(tagged: str) -> str:
    """The crawl name in a key segment: ``{shop}`` (its hash tag) or ``shop`` (a layout of before)."""
    return tagged[1:-1] if tagged.startswith("{") and tagged.endswith("}") else tagged
