"""A review queue and product DB for tests: embedded queue + SQLite, or Redis queue + PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from recordhound.config import ReviewConfig
from recordhound.db import entities
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.sources import ensure_source
from recordhound.catalog.apply import ApplyWorker
from recordhound.review.docstore import RedisDocStore, SqliteDocStore
from recordhound.review.queue import ReviewQueue
from tests.services import PostgresDatabase, redis_url, unique_prefix


@dataclass
class ReviewEnv:
    backend: str
    database_url: str
    redis_url: str
    prefix: str
    queue_path: str
    engine: Engine
    queue: ReviewQueue

    def config(self, **changes: Any) -> ReviewConfig:
        values: dict[str, Any] = dict(
            redis_url=self.redis_url, redis_prefix=self.prefix, path=self.queue_path,
            trust_new_entities=False, price_threshold_pct=5.0, ttl_seconds=0, lease_seconds=30,
            poll_seconds=0.1, ack_delay_seconds=0, batch_size=500)
        values.update(changes)
        return ReviewConfig(**values)

    def writer(self, trusted: bool = False) -> CatalogWriter:
        return CatalogWriter(self.engine, timedelta(hours=1), self.queue, ReviewPolicy(trusted, 5.0))

    def worker(self, **changes: Any) -> ApplyWorker:
        return ApplyWorker(self.engine, self.queue, self.writer(), self.config(**changes))

    def source(self, name: str = "demo") -> int:
        return ensure_source(self.engine, name, "html", "http://127.0.0.1/")

    def seed(self, kind: str, *names: str) -> dict[str, int]:
        from recordhound.text import name_key

        with self.engine.begin() as conn:
            return entities.create_unknown(conn, kind, {name_key(n): [n] for n in names})

    def settings(self) -> list[str]:
        """`-s` settings that point a crawl or a CLI at this queue."""
        found = [f"RECORDHOUND_REVIEW_PATH={self.queue_path}", f"RECORDHOUND_REDIS_PREFIX={self.prefix}"]
        return found + ([f"RECORDHOUND_REDIS_URL={self.redis_url}"] if self.redis_url else [])


@contextmanager
def review_env(backend: str, tmp_path: Path) -> Iterator[ReviewEnv]:
    """``embedded``: SQLite queue file + SQLite product DB; ``redis``: Redis + PostgreSQL."""
    prefix = unique_prefix()
    queue_path = str(tmp_path / "review.sqlite3")
    if backend == "embedded":
        url = f"sqlite:///{tmp_path / 'product.sqlite3'}"
        env = _open(backend, url, "", prefix, queue_path)
        try:
            yield env
        finally:
            env.queue.close()
            env.engine.dispose()
        return
    with PostgresDatabase() as database:
        env = _open(backend, database.url, redis_url(), prefix, queue_path)
        try:
            yield env
        finally:
            env.queue.store.drop()
            env.queue.close()
            env.engine.dispose()


@contextmanager
def open_env(database_url: str, tmp_path: Path) -> Iterator[ReviewEnv]:
    """Over a given product DB (the ``database_url`` fixture): SQLite with the embedded queue,
    PostgreSQL with the Redis queue (under a key prefix of its own, dropped afterwards)."""
    redis = "" if database_url.startswith("sqlite") else redis_url()
    env = _open("redis" if redis else "embedded", database_url, redis, unique_prefix(),
                str(tmp_path / "review.sqlite3"))
    try:
        yield env
    finally:
        if redis:
            env.queue.store.drop()
        env.queue.close()
        env.engine.dispose()


def _open(backend: str, url: str, redis: str, prefix: str, queue_path: str) -> ReviewEnv:
    engine = make_engine(url)
    upgrade(engine)
    store = RedisDocStore(redis, prefix) if redis else SqliteDocStore(queue_path)
    return ReviewEnv(backend, url, redis, prefix, queue_path, engine, ReviewQueue(store))
