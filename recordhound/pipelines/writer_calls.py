"""The store writer's calls in flight, in every writer of the process (``writer_process.py``).

A call is submitted to the writer's executor and awaited (``run``: ``executor.submit`` and
``asyncio.wrap_future``, as ``loop.run_in_executor`` does), and counted until it returns. ``busy``
tells ``scrapy crawl`` whether one has not returned when the reactor stopped under it (a forced
stop): nothing awaits it then, but Python's exit would join its thread (the writer's, or the one that
reads a writer process's replies) and wait for as long as a silent database holds it; the process
leaves at once instead, and says it did not wait for the store's writer (``commands/crawl.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")
_in_flight: set[Future[Any]] = set()


def run(executor: Executor | None, function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """``function(*args)`` in the writer, awaitable, counted until it returns."""
    assert executor is not None, "the writer was not started"
    return asyncio.wrap_future(tracked(executor.submit(function, *args)))


def tracked(running: Future[T]) -> Future[T]:
    _in_flight.add(running)
    running.add_done_callback(_in_flight.discard)
    return running


def busy() -> bool:
    """A call of a writer has not returned."""
    return any(not running.done() for running in list(_in_flight))
