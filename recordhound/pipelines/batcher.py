"""Collect items into batches and write each batch off the reactor, one at a time.

``add`` returns a future that resolves when the batch holding the item is committed,
so an item (and the response that produced it) counts as done only once it is stored.

Back-pressure: every item waiting here holds its response (the page, its parsed tree, its
lease) in the crawler's memory. ``Backlog`` pauses the crawl while too many items wait
(``RECORDHOUND_STORE_MAX_WAITING_ITEMS``) and resumes it once the store has caught up, so the
crawler's memory stays flat however slow the store is. A full batch starts one write task,
never one per item: those tasks were themselves a backlog that grew with every item added
while the store was behind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from recordhound.backoff import retrying
from recordhound.exceptions import reason

logger = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")
QUIET_POLL_SECONDS = 0.1  # how often the timer looks whether what waits may be written before the batch time


class Backlog:
    """Holds a pause while ``max_items`` or more items wait for the store, counting the pages on
    their way to it (``in_flight``: downloading or being parsed, their items not yet here); releases
    it when at most half of that wait. Counting pages in flight too means that what lands after
    the pause began was already counted; the store pipeline also counts as each page goes to the
    downloader, so the pause begins at the bound. ``peak``: the most items that ever waited; ``peak_load``: the most items or pages."""

    def __init__(self, max_items: int, hold: Callable[[], None], release: Callable[[], None],
                 in_flight: Callable[[], int] = lambda: 0) -> None:
        self.max_items, self._hold, self._release, self._in_flight = max_items, hold, release, in_flight
        self.held = False
        self.peak = self.peak_load = 0

    def update(self, waiting: int) -> None:
        load = max(waiting, self._in_flight())
        self.peak, self.peak_load = max(self.peak, waiting), max(self.peak_load, load)
        if not self.held and load >= self.max_items:
            self.held = True
            self._hold()
        elif self.held and load <= self.max_items // 2:
            self.held = False
            self._release()

    def close(self) -> None:
        """The store closes: end a pause still held (pages in flight, or no change since), so that
        ``release`` sees its end (the time it lasted) and nothing outlives the crawl."""
        if self.held:
            self.held = False
            self._release()


class Batcher(Generic[T, R]):
    """``is_transient(exc)`` says whether a failed write should be retried (the database is
    down) rather than failed; while retrying, ``pause``/``resume`` stop and restart the crawl.
    ``backlog``, when given, is told how many items wait after every change. ``quiet()`` true:
    no item will join the batch soon (the caller knows why: ``StorePipeline._quiet``), so what waits
    is written at once instead of at the batch time; the caller calls ``nudge`` when that may have
    become true, and the timer looks every ``QUIET_POLL_SECONDS``."""

    def __init__(self, write: Callable[[list[T]], Awaitable[R]], size: int, flush_seconds: float,
                 on_written: Callable[[R], None], is_transient: Callable[[Exception], bool],
                 pause: Callable[[], None], resume: Callable[[], None], retry_max_seconds: float,
                 backlog: Backlog | None = None, quiet: Callable[[], bool] = lambda: False) -> None:
        self._write, self._size, self._flush_seconds, self._quiet = write, size, flush_seconds, quiet
        self._on_written, self._is_transient = on_written, is_transient
        self._pause, self._resume, self._retry_max = pause, resume, retry_max_seconds
        self.backlog = backlog
        self._pending: list[tuple[T, asyncio.Future[None]]] = []
        self._writing = 0  # items of the batch being written
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._draining: asyncio.Task[None] | None = None  # the one task writing full batches
        self.eager = False  # write each item at once (in batches of what waits), not at the batch time

    @property
    def waiting(self) -> int:
        """Items not yet stored: collected, or in the batch being written."""
        return len(self._pending) + self._writing

    def start(self) -> None:
        self._timer = asyncio.ensure_future(self._tick())

    def add(self, item: T) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        self._drain_if_due()
        self.tell_backlog()
        return future

    def write_eagerly(self, eager: bool) -> None:
        """While ``eager``, write each item at once (in batches of what waits), not at the batch time."""
        self.eager = eager
        self._drain_if_due()

    def nudge(self) -> None:
        """``quiet`` may have turned true: what waits is written now if it did."""
        self._drain_if_due()

    def _batch_due(self) -> bool:
        waiting = len(self._pending)
        return waiting >= self._size or (waiting > 0 and (self.eager or self._quiet()))

    def _drain_if_due(self) -> None:
        if self._batch_due() and (self._draining is None or self._draining.done()):
            self._draining = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        while self._batch_due():
            await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            batch, self._pending = self._pending[: self._size], self._pending[self._size:]
            if not batch:
                return
            self._writing = len(batch)
            try:
                result = await self._write_until_stored([item for item, _ in batch])
            except Exception as exc:  # the database's errors are many; each item gets it
                _resolve(batch, exc)
                return
            finally:
                self._writing = 0
                self.tell_backlog()
            try:
                self._on_written(result)
            except Exception:  # noqa: BLE001 - counting failed, not storing: the items are settled all the same
                logger.exception("Could not count a stored batch of %d items", len(batch))
            _resolve(batch, None)

    def tell_backlog(self) -> None:
        """Count again (also when a page starts: so the pause begins at the bound, not a tick later)."""
        if self.backlog is not None:
            self.backlog.update(self.waiting)

    async def _write_until_stored(self, items: list[T]) -> R:
        """Retry a transient failure with backoff, the crawl paused, until the batch is stored;
        the pause ends however the batch ends (stored, failed for good, cancelled)."""
        retries = 0

        def paused(exc: Exception, attempt: int, delay: float) -> None:
            nonlocal retries
            retries = attempt
            if attempt == 1:
                self._pause()
            logger.warning("Could not store %d items (%s); crawl paused, retry %d in %.1f s",
                           len(items), reason(exc), attempt, delay)
        try:
            result = await retrying(lambda: self._write(items), self._is_transient, self._retry_max, paused)
            if retries:
                logger.warning("Stored %d items after %d retries: the product store is back", len(items), retries)
            return result
        finally:
            if retries:
                self._resume()

    async def _tick(self) -> None:
        """The batch time; between two, ``quiet`` is looked at every ``QUIET_POLL_SECONDS``: it turns
        true on changes no call here marks (the engine begins to close, or pauses)."""
        loop = asyncio.get_running_loop()
        due = loop.time() + self._flush_seconds
        while True:
            await asyncio.sleep(min(self._flush_seconds, QUIET_POLL_SECONDS))
            if loop.time() < due:
                self._drain_if_due()
                continue
            due = loop.time() + self._flush_seconds
            self.tell_backlog()  # pages in flight finish without adding here (a listing, a 304)
            await asyncio.shield(self.flush())  # close() stops the timer, never a batch it is writing

    async def close(self) -> None:
        """Stop the timer and write what waits; return once every item added is stored or failed
        (the batch being written when close began included), with no back-pressure pause held."""
        if self._timer is not None:
            self._timer.cancel()
        await self.flush()  # after the batch being written, if any (the lock)
        while self._pending:
            await self.flush()
        if self.backlog is not None:
            self.backlog.close()


def _resolve(batch: list[tuple[T, asyncio.Future[None]]], exc: Exception | None) -> None:
    """Stored (``exc`` None) or failed; a future its caller cancelled (it stopped waiting) is skipped:
    setting it would raise, and the rest of the batch would never be told."""
    for _, future in batch:
        if future.done():
            continue
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)
