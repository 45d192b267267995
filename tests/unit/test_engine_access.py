"""Scrapy internals the frontier relies on (``frontier/engine_access.py``) are still there."""

from __future__ import annotations

import inspect

from scrapy.core import engine, scraper
from scrapy.core.downloader import Downloader


def test_the_engine_still_has_a_slot_with_nextcall() -> None:
    assert "self._slot" in inspect.getsource(engine.ExecutionEngine.__init__)
    assert "self.nextcall" in inspect.getsource(engine._Slot.__init__)
    assert "self.inprogress" in inspect.getsource(engine._Slot.__init__)  # pages_in_progress
    assert "self.paused" in inspect.getsource(engine.ExecutionEngine.__init__)  # paused
    assert "self.spider" in inspect.getsource(engine.ExecutionEngine.__init__)  # spider_closing


def test_the_downloader_and_scraper_still_expose_what_idleness_is_read_from() -> None:
    assert "self.active" in inspect.getsource(Downloader.__init__)
    assert "self.slot" in inspect.getsource(scraper.Scraper.__init__)
    assert callable(scraper.Slot.is_idle)


def test_the_engine_still_tells_when_it_will_not_ask_for_requests() -> None:
    assert "self.closing" in inspect.getsource(engine._Slot.__init__)  # will_ask: closing
    assert callable(scraper.Slot.needs_backout)  # will_ask: the scraper backs out
