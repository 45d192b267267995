"""Open the review queue the settings name: Redis when a Redis URL is set, else embedded."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine

from recordhound.config import ReviewConfig, StoreConfig
from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.review.docstore import DocStore, RedisDocStore, SqliteDocStore
from recordhound.review.queue import ReviewQueue


def open_store(config: ReviewConfig) -> DocStore:
    if config.redis_url:
        return RedisDocStore(config.redis_url, config.redis_prefix)
    return SqliteDocStore(config.path)


def open_queue(config: ReviewConfig) -> ReviewQueue:
    return ReviewQueue(open_store(config))


def open_writer(engine: Engine, store: StoreConfig, review: ReviewConfig, trusted: bool) -> CatalogWriter:
    """The product-database writer with its review queue: crawls, imports and the apply worker use it."""
    return CatalogWriter(engine, timedelta(seconds=store.last_seen_resolution_seconds), open_queue(review),
                         ReviewPolicy(trusted, review.price_threshold_pct))
