"""Open the review queue the settings name: Redis when a Redis URL is set, else embedded."""

from __future__ import annotations

from recordhound.config import ReviewConfig
from recordhound.review.docstore import DocStore, RedisDocStore, SqliteDocStore
from recordhound.review.queue import ReviewQueue


def open_store(config: ReviewConfig) -> DocStore:
    if config.redis_url:
        return RedisDocStore(config.redis_url, config.redis_prefix)
    return SqliteDocStore(config.path)


def open_queue(config: ReviewConfig) -> ReviewQueue:
    return ReviewQueue(open_store(config))
