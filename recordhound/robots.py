"""robots.txt beyond allow/deny (which Scrapy's ``RobotsTxtMiddleware`` with Protego does):
its ``Crawl-delay`` as a ceiling on the per-host rate every node shares, and its ``Sitemap:`` lines.

The crawl delay is read once per node when the frontier opens (off the reactor thread), before
any page is requested, so no node starts faster than the shop asked. A profile may ignore
robots.txt only with a stated reason (``robots: {obey: false, reason: ...}``), logged at start.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from protego import Protego

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from recordhound.frontier.politeness import Limits

logger = logging.getLogger(__name__)


class UnreadableRobotsOneLine(logging.Filter):
    """Scrapy logs a robots.txt it cannot download as an ERROR with a traceback; for recordhound
    that is one warning line (every page is then allowed; the crawl's own errors say the rest)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Error downloading") and record.exc_info:
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def install_log_filter() -> None:
    robots_logger = logging.getLogger("scrapy.downloadermiddlewares.robotstxt")
    if not any(isinstance(f, UnreadableRobotsOneLine) for f in robots_logger.filters):
        robots_logger.addFilter(UnreadableRobotsOneLine())


def fetch_robots(base_url: str, user_agent: str, timeout: float) -> Protego | None:
    """The shop's robots.txt, parsed; None when it has none (or it cannot be read: allow all)."""
    request = urllib.request.Request(urljoin(base_url, "/robots.txt"), headers={"User-Agent": user_agent})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the profile's own shop
            text = response.read(500_000).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        logger.info("No robots.txt read from %s (%s): no Crawl-delay", base_url, exc)
        return None
    return Protego.parse(text)


def crawl_delay(robots: Protego | None, user_agent: str) -> float | None:
    if robots is None:
        return None
    delay = robots.crawl_delay(user_agent)
    return float(delay) if delay else None


def with_crawl_delay(limits: Limits, delay: float | None) -> Limits:
    """``Crawl-delay: D`` caps the shared rate at 1/D requests a second (a lower configured rate stays)."""
    if not delay:
        return limits
    ceiling = 1.0 / delay
    rate = min(limits.requests_per_second, ceiling) if limits.requests_per_second else ceiling
    return replace(limits, requests_per_second=rate)


def robots_limits(limits: Limits, spider: Any, settings: BaseSettings) -> Limits:
    """The politeness limits with the shop's Crawl-delay applied (when robots.txt is obeyed)."""
    profile = getattr(spider, "profile", None)
    if profile is None or not settings.getbool("ROBOTSTXT_OBEY") or not profile.base_url:
        return limits
    agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "*"
    delay = crawl_delay(fetch_robots(profile.base_url, agent, settings.getfloat("DOWNLOAD_TIMEOUT")), agent)
    if delay:
        logger.info("robots.txt of %s: Crawl-delay %g s, so at most %.3g requests a second (all nodes)",
                    profile.base_url, delay, 1.0 / delay)
    return with_crawl_delay(limits, delay)
