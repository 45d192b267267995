"""`scrapy crawl` inside recordhound: a user error at start-up is one line, and a crawl that
ended on a fatal error (the frontier's, say) exits non-zero.

Scrapy's own command reports an exception raised while the crawler starts (Redis or
PostgreSQL unreachable, an invalid profile) as tracebacks, several times over. A
:class:`~recordhound.exceptions.RecordhoundError` is a message written for the user: it is
printed once, as ``error: ...``, and the exit code is 1; 75 (EX_TEMPFAIL) when Redis or the product
database could not be reached (:class:`~recordhound.exceptions.Unavailable`, or the node gave up joining
the crawl as ``frontier_unreachable``: nothing was crawled, the same command is worth running again;
``recordhound worker`` does). ``-s LOG_LEVEL=DEBUG`` still logs the
traceback. Anything else keeps Scrapy's behaviour: the error and its traceback, logged once.

A second Ctrl-C (SIGINT or SIGTERM) stops the reactor with the crawl still closing, maybe inside a
call of the store's writer that a silent database holds: Python's exit would then join that call's
thread and wait for it (before, the node hung on). The process leaves at once instead (``os._exit``,
its log flushed), as a kill would; its writer process exits when it sees its crawler gone, and the
pages not acked are fetched again by the next crawl. (A first stop that comes during a close waits
for that close: ``extensions/whole_close.py``.)
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import UsageError
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from recordhound import preflight
from recordhound.errors import FATAL_STAT
from recordhound.exceptions import RecordhoundError, Unavailable
from recordhound.extensions.health import HEALTH_STAT
from recordhound.frontier.engine_access import spider_closing
from recordhound.frontier.registry import NOT_JOINED_STAT
from recordhound.jobs import orphans
from recordhound.pipelines.writer_calls import busy
from recordhound.pipelines.writer_process import discard_early

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def user_error(exc: BaseException | None) -> RecordhoundError | None:
    """The RecordhoundError behind ``exc`` (raised directly or as the cause of another)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, RecordhoundError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _start_the_writer(settings: BaseSettings, spider_args: dict[str, str]) -> None:
    """With the store on, its writer process starts now, before Scrapy builds the crawler (the store
    adopts it: ``writer_process.start_early``)."""
    if not settings.getbool("RECORDHOUND_STORE_ENABLED"):
        return  # the store's settings are not read (nor checked) when it is off
    from recordhound.config import ReviewConfig, StoreConfig
    from recordhound.pipelines.writer_process import start_early
    from recordhound.sources import load_profile

    store, review = StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings)  # the check read them
    if store.writer == "process":
        profile = load_profile(spider_args.get("source") or "demo", settings.getlist("RECORDHOUND_PROFILES_DIRS"))
        start_early(store, review, profile.trusted or review.trust_new_entities)


class Command(ScrapyCrawl):
    _preflight: RecordhoundError | None = None

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Check before Scrapy starts its crawler process, so a failed check is the only output
        (not after Scrapy's start-up banner); at DEBUG level the banner stays."""
        super().process_options(args, opts)
        assert self.settings is not None
        try:
            if orphans.worker_gone():  # a crawl `recordhound worker` started: it stops when the worker is gone
                raise RecordhoundError("the worker that started this crawl is gone (its job is taken over): "
                                       "not crawling")
            preflight.check(self.settings, opts.spargs)
        except RecordhoundError as exc:
            self._preflight = exc
            if self.settings.get("LOG_LEVEL") != "DEBUG":
                self.settings.set("LOG_LEVEL", "ERROR", priority="cmdline")
            return
        if args == ["catalog"]:
            _start_the_writer(self.settings, opts.spargs)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one spider: scrapy crawl catalog -a source=NAME")
        assert self.crawler_process is not None and self.settings is not None
        self._error: RecordhoundError | None = None
        if self._preflight is not None:
            self._report(self._preflight, self._preflight)
            self.exitcode = _code_of(self._preflight)
            return
        crawler = self._create_crawler(args[0])
        running = self.crawler_process.crawl(crawler, **opts.spargs)
        if isinstance(running, Deferred):
            running.addErrback(self._on_failure)
        elif isinstance(running, asyncio.Future):
            running.add_done_callback(self._on_done)
        self.crawler_process.start()
        discard_early()  # a writer started before the crawler and never taken (the crawl did not start)
        self.exitcode = self._exit_code(crawler)
        if busy():
            _leave_now(self.exitcode, "the store's writer, in a call that has not returned")
        if _still_closing(running) or spider_closing(crawler):
            _leave_now(self.exitcode, "the crawl's last calls")

    def _on_failure(self, failure: Failure) -> Failure | None:
        error = user_error(failure.value)
        if error is None:
            return failure
        self._report(error, failure.value)
        return None

    def _on_done(self, task: asyncio.Future[Any]) -> None:
        if task.cancelled() or (exc := task.exception()) is None:
            return
        error = user_error(exc)
        if error is not None:
            self._report(error, exc)
        else:  # Scrapy's report (asyncio's, of an error nobody read: reading it here took that away)
            logger.error("The crawl failed: %s: %s", type(exc).__name__, exc, exc_info=exc)

    def _report(self, error: RecordhoundError, exc: BaseException | None) -> None:
        self._error = error
        logger.debug("Start-up failed", exc_info=exc)
        print(f"error: {error}", file=sys.stderr)

    def _exit_code(self, crawler: Crawler) -> int:
        assert self.crawler_process is not None
        try:
            stats = crawler.stats
        except RuntimeError:  # the crawl never started (its error was said): Scrapy made no stats
            stats = None
        fatal = stats.get_value(FATAL_STAT) if stats else None
        if fatal:
            print(f"error: the crawl stopped: {fatal}", file=sys.stderr)
        unhealthy = stats.get_value(HEALTH_STAT) if stats else None
        if unhealthy and not fatal:  # a crawl stopped on an error fails its checks too: one line says why
            print(f"error: the crawl failed its health checks: {unhealthy}", file=sys.stderr)
        if self._error is not None and not (fatal or unhealthy):
            return _code_of(self._error)
        if stats and stats.get_value(NOT_JOINED_STAT) == "frontier_unreachable":  # it held nothing, did nothing
            return Unavailable.EXIT_CODE
        return 1 if fatal or unhealthy or self.crawler_process.bootstrap_failed else 0


def _code_of(error: RecordhoundError) -> int:
    """1 for a user's error; ``Unavailable.EXIT_CODE`` when a service could not be reached (try again)."""
    return Unavailable.EXIT_CODE if isinstance(error, Unavailable) else 1


def _still_closing(running: object) -> bool:
    """The reactor stopped before the crawl finished (a second Ctrl-C during its close)."""
    if isinstance(running, Deferred):
        return not running.called
    return isinstance(running, asyncio.Future) and not running.done()


def _leave_now(code: int, waiting: str) -> None:
    logger.warning("The reactor stopped before the crawl finished closing (a forced stop, or a stop while it "
                   "opened): leaving without waiting for %s; what it did not ack is fetched again", waiting)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: leaving all the same
            pass
    os._exit(code)
