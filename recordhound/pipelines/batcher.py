"""Collect items into batches and write each batch off the reactor, one at a time.

``add`` returns a future that resolves when the batch holding the item is committed,
so an item (and the response that produced it) counts as done only once it is stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from recordhound.backoff import backoff_seconds

logger = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    """``is_transient(exc)`` says whether a failed write should be retried (the database is
    down) rather than failed; while retrying, ``pause``/``resume`` stop and restart the crawl."""

    def __init__(self, write: Callable[[list[T]], Awaitable[R]], size: int, flush_seconds: float,
                 on_written: Callable[[R], None], is_transient: Callable[[Exception], bool],
                 pause: Callable[[], None], resume: Callable[[], None], retry_max_seconds: float) -> None:
        self._write, self._size, self._flush_seconds = write, size, flush_seconds
        self._on_written, self._is_transient = on_written, is_transient
        self._pause, self._resume, self._retry_max = pause, resume, retry_max_seconds
        self._pending: list[tuple[T, asyncio.Future[None]]] = []
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._timer = asyncio.ensure_future(self._tick())

    def add(self, item: T) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if len(self._pending) >= self._size:
            asyncio.ensure_future(self.flush())
        return future

    async def flush(self) -> None:
        async with self._lock:
            batch, self._pending = self._pending[: self._size], self._pending[self._size:]
            if not batch:
                return
            try:
                result = await self._write_until_stored([item for item, _ in batch])
            except Exception as exc:  # the database's errors are many; each item gets it
                for _, future in batch:
                    future.set_exception(exc)
                return
            self._on_written(result)
            for _, future in batch:
                future.set_result(None)

    async def _write_until_stored(self, items: list[T]) -> R:
        """Retry a transient failure with backoff, the crawl paused, until the batch is stored;
        the pause ends however the batch ends (stored, failed for good, cancelled)."""
        attempt = 0
        try:
            while True:
                try:
                    result = await self._write(items)
                except Exception as exc:
                    if not self._is_transient(exc):
                        raise
                    attempt += 1
                    delay = backoff_seconds(attempt, self._retry_max)
                    if attempt == 1:
                        self._pause()
                    logger.warning("Could not store %d items (%s: %s); crawl paused, retry %d in %.1f s",
                                   len(items), type(exc).__name__, exc, attempt, delay)
                    await asyncio.sleep(delay)
                    continue
                if attempt:
                    logger.warning("Stored %d items after %d retries; crawl resumed", len(items), attempt)
                return result
        finally:
            if attempt:
                self._resume()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self._flush_seconds)
            await self.flush()

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        while self._pending:
            await self.flush()
