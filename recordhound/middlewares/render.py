"""JavaScript pages: render the link kinds a profile names in the system Chromium.

A profile's ``render:`` section puts plain JSON on a request's meta (``recordhound_render``:
what to wait for, the timeout), so the request can be stored in the frontier like any other.
This middleware turns it into scrapy-playwright's meta just before the download; those keys
hold live objects and are never stored (``frontier/serialize.py`` drops them).

Only crawls whose profile renders something start Playwright (and run this middleware): ``enable_rendering`` sets the
download handlers from the spider's ``from_crawler``, after checking that the browser is there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from recordhound.exceptions import ConfigError

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from recordhound.sources.profile import Profile

RENDER_META = "recordhound_render"
HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
INSTALL_HINT = "install it with `apt-get update && apt-get install -y chromium` (Debian)"


def enable_rendering(settings: BaseSettings, profile: Profile) -> None:
    """Fail now, with what to do, if the browser is missing: a crawl that cannot render
    finishes with zero items otherwise."""
    browser = str(settings.get("RECORDHOUND_CHROMIUM_PATH") or "/usr/bin/chromium")
    if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
        raise ConfigError(
            f"source {profile.name!r} renders {', '.join(sorted(profile.render))} pages in a browser, "
            f"but there is no Chromium at {browser}: {INSTALL_HINT}, or point "
            f"RECORDHOUND_CHROMIUM_PATH at the chromium binary")
    try:
        max_pages = int(settings.get("RECORDHOUND_RENDER_MAX_PAGES"))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"RECORDHOUND_RENDER_MAX_PAGES must be a whole number, "
                          f"got {settings.get('RECORDHOUND_RENDER_MAX_PAGES')!r}") from exc
    if max_pages <= 0:
        raise ConfigError(f"RECORDHOUND_RENDER_MAX_PAGES must be above 0, got {max_pages}")
    settings.set("DOWNLOAD_HANDLERS", {"http": HANDLER, "https": HANDLER}, priority="spider")
    settings.set("PLAYWRIGHT_BROWSER_TYPE", "chromium", priority="spider")
    settings.set("PLAYWRIGHT_LAUNCH_OPTIONS", {
        "executable_path": browser, "headless": True,
        # no GPU, no /dev/shm exhaustion in containers
        "args": ["--disable-gpu", "--disable-dev-shm-usage"],
    }, priority="spider")
    settings.set("PLAYWRIGHT_MAX_CONTEXTS", 1, priority="spider")
    settings.set("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT", max_pages, priority="spider")


class RenderMiddleware:
    """Downloader middleware: ``recordhound_render`` meta → scrapy-playwright meta."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        profile = getattr(crawler.spider, "profile", None)
        if profile is not None and not profile.render:
            raise NotConfigured  # the source renders no kind of page: no work per request (no message: no WARNING)
        return cls()

    def process_request(self, request: Request, spider: Any = None) -> None:
        spec = request.meta.get(RENDER_META)
        if not spec or request.meta.get("playwright"):
            return None
        from scrapy_playwright.page import PageMethod

        request.meta["playwright"] = True
        if spec.get("wait_for"):
            request.meta["playwright_page_methods"] = [
                PageMethod("wait_for_selector", spec["wait_for"], timeout=spec["timeout_ms"])]
        request.meta["playwright_page_goto_kwargs"] = {"timeout": spec["timeout_ms"]}
        return None
