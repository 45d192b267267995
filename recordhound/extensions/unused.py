"""Scrapy components that a node's settings turn off, not imported unless a setting turns them on.

Scrapy imports every component of its ``*_BASE`` lists to ask it whether it is configured. Two of
them are off on a node (``settings.py``) and cost start-up all the same: the remote-control
extension imports aiohttp (~0.14 s of CPU at each start) and the cookies middleware tldextract
(~0.04 s). These stand-ins take their places in the base lists (at the same order), read the
setting first and build Scrapy's own component only when it is on (``-s COOKIES_ENABLED=true``, a
spider's ``custom_settings``), so turning one on works as in any Scrapy project. Disabling them in
``EXTENSIONS`` / ``DOWNLOADER_MIDDLEWARES`` instead would not do: Scrapy imports each key of those
to compare it with the base list's, ``None`` or not. Measured in docs/benchmarks.md ("Start-up").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.python import global_object_name

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class WhenEnabled:
    """Builds ``component`` (Scrapy's own class, by path) when ``setting`` is true; else not configured.

    A project that names the component in ``components`` itself (``None`` to turn it off or replace
    it, a number to move it) has Scrapy build that entry as in any project, so the stand-in steps
    aside: it would otherwise run the component a second time, or run it when it was turned off."""

    setting: ClassVar[str]
    component: ClassVar[str]
    components: ClassVar[str]  # the project's setting that orders such components

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        if not crawler.settings.getbool(cls.setting) or cls._named_by_project(crawler):
            raise NotConfigured  # silently, as Scrapy's own component does when off
        return build_from_crawler(load_object(cls.component), crawler)

    @classmethod
    def _named_by_project(cls, crawler: Crawler) -> bool:
        keys = crawler.settings.getdict(cls.components)
        return any((key if isinstance(key, str) else global_object_name(key)) == cls.component for key in keys)


class RemoteControl(WhenEnabled):
    setting = "REMOTE_CONTROL_ENABLED"
    component = "scrapy.extensions.remote_control.RemoteControl"
    components = "EXTENSIONS"


class Cookies(WhenEnabled):
    setting = "COOKIES_ENABLED"
    component = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
    components = "DOWNLOADER_MIDDLEWARES"


def swapped(base: dict[str, int], stand_in: type[WhenEnabled]) -> dict[str, int]:
    """Scrapy's base list with ``stand_in`` in its component's place (as it is if Scrapy has none)."""
    path = f"{stand_in.__module__}.{stand_in.__qualname__}"
    return {path if key == stand_in.component else key: order for key, order in base.items()}
