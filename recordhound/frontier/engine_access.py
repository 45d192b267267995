"""The things recordhound needs from Scrapy's engine that no public API gives.

1. ``wake``: ask the engine for requests now, not at its next 5-second heartbeat, when work
   arrives from another node or the crawl is over (``ExecutionEngine._slot.nextcall``).
2. ``engine_idle``: nothing is downloading or being scraped, so a handed-out request without an
   outcome is orphaned (``engine.downloader.active``, ``engine.scraper.slot.is_idle()``).
3. ``paused``: the engine starts no request now (``engine.paused``, set by ``pause()``, which
   ``recordhound/pause.py`` owns; the telnet console's ``engine.pause()`` too).
4. ``downloading``: a request is in the downloader (``engine.downloader.active``), and ``will_ask``:
   the engine will ask for requests soon (not paused, not closing: ``ExecutionEngine._slot.closing``,
   its scraper not backing out: ``scraper.slot.needs_backout()``): when nothing downloads and no
   request will start soon, the store writes what waits at once, not at the batch time
   (``pipelines/store.py``).
5. ``spider_closing``: the engine holds a spider whose close has not ended (``engine.spider`` and
   ``ExecutionEngine._slot``), for a stop that must wait for that close (``extensions/whole_close.py``).

These are Scrapy internals, kept here only. ``tests/unit/test_engine_access.py`` fails when a
Scrapy release renames them; without them the crawl still works, only slower to notice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def wake(crawler: Crawler) -> bool:
    """Schedule the engine's next request round now; False if this Scrapy has no such hook."""
    slot = getattr(crawler.engine, "_slot", None)
    nextcall = getattr(slot, "nextcall", None)
    if nextcall is None:
        return False
    nextcall.schedule()
    return True


def pages_in_progress(crawler: Crawler) -> int:
    """Pages the engine holds, from download until their output is processed; 0 if unknown."""
    inprogress = getattr(getattr(crawler.engine, "_slot", None), "inprogress", None)
    return len(inprogress) if inprogress is not None else 0


def paused(crawler: Crawler) -> bool:
    """Whether the engine is paused (it asks the scheduler for nothing until it resumes)."""
    return bool(getattr(crawler.engine, "paused", False))


def downloading(crawler: Crawler) -> bool:
    """Whether any request is in the downloader (waiting for its slot or transferring); True if unknown."""
    active = getattr(getattr(crawler.engine, "downloader", None), "active", None)
    return True if active is None else bool(active)


def will_ask(crawler: Crawler) -> bool:
    """Whether the engine will ask the scheduler for requests soon: not paused, not closing the spider
    (``_slot.closing``), its scraper not backing out (``scraper.slot.needs_backout()``: it holds more
    responses than ``SCRAPER_SLOT_MAX_ACTIVE_SIZE``); True if unknown."""
    engine = crawler.engine
    if engine is None or paused(crawler):
        return engine is None
    if getattr(getattr(engine, "_slot", None), "closing", None) is not None:
        return False
    backout = getattr(getattr(engine.scraper, "slot", None), "needs_backout", None)
    return not (callable(backout) and backout())


def engine_idle(crawler: Crawler) -> bool:
    engine = crawler.engine
    if engine is None:
        return False
    scraper_slot = getattr(engine.scraper, "slot", None)
    return not getattr(engine.downloader, "active", True) and scraper_slot is not None and scraper_slot.is_idle()


def spider_closing(crawler: Crawler) -> bool:
    """The engine holds a spider (its close, if begun, has not ended). Not before the engine was built
    (Scrapy raises then), nor when its slot never was (the scheduler failed to build: no close will come)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # "Crawler.engine is not set yet": the spider or the engine failed to build
        return False
    return engine is not None and engine.spider is not None and getattr(engine, "_slot", None) is not None
