"""The store's writer: one child process (``catalog/worker.py``) that does the crawl's product-database
work (the source's opening and status, the batches, the 304s: ``pipelines/store.py``), or a thread with
``RECORDHOUND_STORE_WRITER=thread``; one call at a time.

It is started when the store opens, not at the first batch: its interpreter imports SQLAlchemy and
the catalog writer while the crawl fetches its first pages, so neither the first batch nor a short
crawl's close waits for all of it (``bench/startup.py``). A writer that never took a batch is stopped
at close without waiting for it. When told to stop, a writer process closes its connections and
ends without the interpreter's teardown (``worker._leave``). The child ignores SIGINT: a terminal's
Ctrl-C reaches the whole process group, and stopping is the crawler's to decide (it writes what
waits, records the crawl's end, then closes the writer). A writer that dies is replaced at once,
and the batcher retries the batch. One that
dies again on the same batch gets its items one at a time (the last of each external id), each in a
new writer when the last died: an item that kills it ``DEATHS_PER_ITEM`` times alone is rejected
with the reason, the rest are written, once a new writer survives a test write. One that dies
then too dies whatever it writes (memory, the system): no item is rejected, and the batch is
retried whole, as in an outage. A writer that dies while starting is no batch's doing. A call that
lasts (a database that went silent on an open connection raises nothing for minutes) is said as a
warning after ``SLOW_CALL_SECONDS`` and again every ``STILL_SLOW_SECONDS`` until it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import time
import types
from collections.abc import Callable, Iterator
from concurrent.futures import BrokenExecutor, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from recordhound.catalog import worker
from recordhound.catalog.result import BatchResult
from recordhound.children import sigint_ignored_by_children
from recordhound.config import ReviewConfig, StoreConfig
from recordhound.exceptions import reason
from recordhound.items import FieldProblem, Offer, Release
from recordhound.pipelines.writer_calls import run, tracked
from recordhound.text import text_or


logger = logging.getLogger(__name__)
T = TypeVar("T")
DEATHS_PER_ITEM = 2  # an item alone that kills a new writer this many times in a row is rejected
SLOW_CALL_SECONDS, STILL_SLOW_SECONDS = 10.0, 60.0  # a call this long is said, then again every STILL_SLOW_SECONDS
DOING = {"open_source": "opening the crawl's source", "record_progress": "recording the crawl's progress or end",
         "touch": "recording pages that answered 304"}  # a call's function → what a slow call is said to do


class WriterProcess:
    def __init__(self, config: StoreConfig, review: ReviewConfig, trusted: bool) -> None:
        self._args = (config, review, trusted)
        self._executor: Executor | None = None
        self._process: multiprocessing.process.BaseProcess | None = None  # the child, for its exit code
        self._started: Future[None] | None = None  # done without error: the child started (a death after is a write's)
        self._used = False  # a batch was handed to this writer
        self._broke_on: tuple[int, ...] = ()  # the batch the writer died on last (its items' ids)
        self._turn = asyncio.Lock()  # one call at a time: a writer that dies is replaced once, by its caller

    def start(self) -> None:
        config, review, trusted = self._args
        if config.writer == "thread":
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="recordhound-store",
                                                initializer=worker.init, initargs=self._args)
        else:
            self._executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=worker.init, initargs=(*self._args, os.getpid()))
        self._used = False
        executor = self._executor
        spawning = contextlib.nullcontext() if config.writer == "thread" else _spawning()
        with spawning:  # a child process is spawned by this submit
            started = tracked(executor.submit(worker.ready))
        self._process = next(iter((getattr(executor, "_processes", None) or {}).values()), None)
        self._started = started
        started.add_done_callback(lambda done: self._start_failed(done, executor))

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in the writer (``catalog/worker.py``: the source's status, the 304s). A
        writer that died meanwhile is replaced, and the error raised: the caller tries again or gives up."""
        async with self._turn:
            assert self._executor is not None, "the writer was not started"
            try:
                with _said_when_slow(DOING.get(getattr(function, "__name__", ""), f"calling {function!r}")):
                    return await run(self._executor, function, *args)
            except BrokenExecutor:
                self._restart()
                raise

    async def write(self, source_id: int, items: list[Release]) -> BatchResult:
        async with self._turn:
            with _said_when_slow(f"writing a batch of {len(items)} items"):
                return await self._write(source_id, items)

    async def _write(self, source_id: int, items: list[Release]) -> BatchResult:
        assert self._executor is not None, "the writer was not started"
        self._used = True
        try:
            written = await self._submit(source_id, items)
        except BrokenExecutor:
            if not self._restart()[1]:  # it died starting (its review queue file, say): no batch's doing
                raise
            batch, self._broke_on = self._broke_on, tuple(map(id, items))  # the batcher retries the same items
            if batch != self._broke_on:
                raise
            self._broke_on = ()
            logger.error("The database writer process died twice on the same batch (%d items): writing its items "
                         "one at a time", len(items))
            return await self._one_at_a_time(source_id, items)
        self._broke_on = ()
        return written

    async def _submit(self, source_id: int, items: list[Release]) -> BatchResult:
        executor = self._executor
        assert executor is not None, "the writer was not started"
        if not isinstance(executor, ProcessPoolExecutor):
            written = await run(executor, worker.write, source_id, items)
            assert written is not None
            return written
        items = [plain(item) for item in items]
        try:
            batch: bytes | None = pickle.dumps(items, pickle.HIGHEST_PROTOCOL)  # what the executor did
        except Exception:  # noqa: BLE001 - whatever pickling raises: the items are told apart below
            batch = None
        written = await run(executor, worker.write, source_id, batch) if batch else None
        if written is None:  # one of them cannot be pickled here or read there: item by item
            written = await run(executor, worker.write_each, source_id, _one_by_one(items))
        return written

    async def _one_at_a_time(self, source_id: int, items: list[Release]) -> BatchResult:
        """A batch the writer died on twice: each item alone; the ones that kill a new writer
        ``DEATHS_PER_ITEM`` times in a row are rejected with the reason."""
        total = BatchResult()
        fatal: list[tuple[bytes, str]] = []
        for position, item in enumerate(_last_of_each(items)):  # as the writer keeps them
            for _ in range(DEATHS_PER_ITEM):
                try:
                    total.add(await self._submit(source_id, [item]))
                    break
                except BrokenExecutor:
                    why, writing = self._restart()
                    if not writing:  # it died starting: the batch waits whole, as in an outage
                        raise
            else:
                fatal.append((_identity_blob(item, position), (
                    f"the store's writer process died writing it ({why}), {DEATHS_PER_ITEM} times alone in a new "
                    "writer, which then survived a test write")))
        if fatal:
            try:  # the items' doing, or the writer's whatever it writes (memory, the system)?
                await run(self._executor, worker.probe, source_id)
            except BrokenExecutor:
                why, _ = self._restart()
                logger.error("The database writer process dies whatever it writes (%s), a test write too: "
                             "no item is rejected, the batch waits as in an outage", why)
                raise BrokenProcessPool(f"the database writer process dies whatever it writes ({why})") from None
            try:
                total.add(await run(self._executor, worker.reject, source_id, fatal))
            except BrokenExecutor:
                self._restart()  # the batch is retried (a rejection is idempotent)
                raise
        return total

    def _restart(self) -> tuple[str, bool]:
        """Start a new writer in place of the dead one; returns how the dead one ended, and whether it
        died writing (it had started) rather than starting."""
        started, process = self._started, self._process
        writing = started is not None and started.done() and not started.cancelled() and started.exception() is None
        code = _exit_code(process) if process is not None else None
        if process is not None and code is None and process.is_alive():  # a pool broken by a reply this
            process.kill()  # process cannot read; its writer ignores SIGTERM, which Python stops such workers with
            why = "alive, with a reply the crawler could not read; stopped"
        else:
            why = _ending(code)
        logger.error("The database writer process died %s (%s); starting a new one",
                     "writing" if writing else "starting", why)
        self.start()
        return why, writing

    async def close(self) -> None:
        """Stop the writer: one that took batches finishes what it holds (the batcher waited for them)
        and exits; one that never did is stopped at once. The reactor runs on meanwhile."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if not self._used or getattr(executor, "_broken", False):
            for process in list((getattr(executor, "_processes", None) or {}).values()):
                process.kill()  # idle, or still starting: nothing of ours in it (it ignores SIGTERM)
        await asyncio.to_thread(executor.shutdown, True)

    def discard(self) -> None:
        """Stop a writer nothing was handed to, at once: still starting, or idle."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        for process in list((getattr(executor, "_processes", None) or {}).values()):
            process.kill()  # it ignores SIGTERM (the crawler stops it)
        executor.shutdown(wait=True, cancel_futures=True)  # quick (killed); not waiting left a wakeup pipe that
        # Python's exit then wrote to, closed (a traceback at the exit of a node that did not join)

    def _start_failed(self, started: Future[None], executor: Executor) -> None:
        """Say why a writer did not start, unless it was closed or replaced meanwhile (close stops one
        that is still starting)."""
        if executor is self._executor and not started.cancelled() and (exc := started.exception()) is not None:
            logger.warning("The database writer did not start (%s); the first write starts another", reason(exc))


_early: WriterProcess | None = None  # started by `scrapy crawl` before Scrapy builds its crawler


def start_early(config: StoreConfig, review: ReviewConfig, trusted: bool) -> None:
    """``scrapy crawl`` starts the writer process as soon as its start-up check passed, before Scrapy
    builds the crawler: the writer's interpreter and imports (~0.4 s) then overlap the crawler's own
    start, not the crawl (a short crawl's end waited for them). The store adopts it when it opens."""
    global _early
    if _early is not None:
        _early.discard()
    _early = WriterProcess(config, review, trusted)
    _early.start()


def adopt_early(config: StoreConfig, review: ReviewConfig, trusted: bool) -> WriterProcess | None:
    """The writer ``start_early`` started, if it was started for these settings; one started for
    others (a spider's own settings changed the store's) is stopped. None: start one."""
    global _early
    early, _early = _early, None
    if early is None or early._args == (config, review, trusted):
        return early
    early.discard()
    return None


def discard_early() -> None:
    """A writer ``start_early`` started and no store adopted (the crawl did not start): stopped now,
    not waited for at the process's exit."""
    global _early
    early, _early = _early, None
    if early is not None:
        early.discard()


def _ending(code: int | None) -> str:
    """How a process with exit code ``code`` ended, in words."""
    if code is None:
        return "exit status unknown"
    if code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:  # a real-time signal has no name
        return f"killed by signal {-code}"
    return f"killed by {name}" + (": the system's out-of-memory killer sends it" if name == "SIGKILL" else "")


def _exit_code(process: multiprocessing.process.BaseProcess) -> int | None:
    """A dead writer's exit code. The pool's own thread reaps it too, and a ``join`` that loses that
    race returns before the code is known: it is read again for up to a second."""
    deadline = time.monotonic() + 1.0
    process.join(1.0)
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return process.exitcode


def plain(item: Release) -> Release:
    """``item`` as recordhound's own classes. The writer process has no ``__main__`` of the crawler's
    (``_main_module_hidden``), so a ``Release``, ``Offer`` or ``FieldProblem`` subclass a launcher
    script defined could not be unpickled there: the writer gets their fields in the plain classes
    (and so recordhound's methods: a subclass's override of ``numbers()`` or ``all_offers()`` is not
    what the process writer calls). Any other value only ``__main__`` has makes its item rejected,
    with the reason (``worker.write_each``), and the rest of the batch is written."""
    if (type(item) is Release and all(type(offer) is Offer for offer in item.offers)
            and all(type(problem) is FieldProblem for problem in item.problems)):
        return item
    values = _fields(item, Release)
    values["offers"] = [offer if type(offer) is Offer else Offer(**_fields(offer, Offer)) for offer in item.offers]
    values["problems"] = [problem if type(problem) is FieldProblem else FieldProblem(**_fields(problem, FieldProblem))
                          for problem in item.problems]
    return Release(**values)


def _one_by_one(items: list[Release]) -> list[tuple[bytes, bytes | str]]:
    """Each item pickled apart (or why it cannot be), with its identity as plain strings for the
    review queue's rejected list; the last of each external id only, as the writer keeps."""
    pickled: list[tuple[bytes, bytes | str]] = []
    for position, item in enumerate(_last_of_each(items)):
        try:
            blob: bytes | str = pickle.dumps(item, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - whatever pickling raises: this item's fault
            blob = f"{type(exc).__name__}: {str(exc)[:200]}"
        pickled.append((_identity_blob(item, position), blob))
    return pickled


def _last_of_each(items: list[Release]) -> list[Release]:
    """The last item of each external id, as the writer keeps them."""
    try:
        return list({item.external_id: item for item in items}.values())
    except TypeError:  # an external id that cannot be a key: the writer rejects or fails it
        return items


def _identity_blob(item: Release, position: int) -> bytes:
    """``_identity`` pickled (plain strings and an int: it always can be)."""
    return pickle.dumps(_identity(item, position), pickle.HIGHEST_PROTOCOL)


def _identity(item: Release, position: int) -> Release:
    """Who ``item`` is, in plain strings (what a rejected item shows when the item itself cannot be
    read); a value whose ``str()`` fails gives way to the next best name, never another item's."""
    url = text_or(getattr(item, "url", None), f"item {position + 1} of a batch")
    line = getattr(item, "line", None)
    return Release(text_or(getattr(item, "source", None), "?"), url, text_or(getattr(item, "external_id", None), url),
                   "" if (title := getattr(item, "title", None)) is None else text_or(title, ""), [],
                   line=line if type(line) is int else None)


def _fields(value: Any, cls: type) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(cls)}


@contextlib.contextmanager
def _said_when_slow(doing: str) -> Iterator[None]:
    """A call that lasts is said (a database that stopped answering on an open connection makes no error
    for a long while, the writer only waits): after ``SLOW_CALL_SECONDS``, then every ``STILL_SLOW_SECONDS``."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    later: asyncio.TimerHandle

    def say() -> None:
        nonlocal later
        logger.warning("The store's writer has been %s for %d s (a slow or unanswering product DB?); the items "
                       "waiting, their pages' acks and a stop of the crawl wait for it", doing, loop.time() - began)
        later = loop.call_later(STILL_SLOW_SECONDS, say)
    later = loop.call_later(SLOW_CALL_SECONDS, say)
    try:
        yield
    finally:
        later.cancel()


@contextlib.contextmanager
def _spawning() -> Iterator[None]:
    with sigint_ignored_by_children(), _main_module_hidden():
        yield


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Spawn the writer without the crawler's ``__main__``. multiprocessing's spawn runs the parent's
    main module in the child (as ``__mp_main__``): for ``scrapy crawl`` that is the ``scrapy`` console
    script, which imports Scrapy and Twisted (about 0.3 s of the writer's start, for nothing); for a
    launcher without a ``__main__`` guard it is a whole second crawl in the writer, which then never
    writes. What the writer runs and receives lives in recordhound's modules (``catalog/worker.py``,
    the configs; the items as ``plain`` makes them), so the child is spawned while a bare module
    stands in for ``__main__``: a few statements on the reactor's thread, and ``ProcessPoolExecutor``
    spawns its one process inside ``submit``, where the stand-in is read. A launcher's top-level code
    (a dialect registered, an event listener) no longer runs in the writer."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main
