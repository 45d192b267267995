"""robots.txt beyond allow/deny (which Scrapy's ``RobotsTxtMiddleware`` with Protego does):
its ``Crawl-delay`` as a ceiling on the per-host rate every node shares, and its ``Sitemap:`` lines.

The crawl delay is read once per node when the frontier opens (off the reactor thread), before
any page is requested, so no node starts faster than the shop asked. That copy is the process's
only download of the shop's robots.txt: ``ReadOnceRobotsTxtMiddleware`` (Scrapy's middleware) and
the spider's sitemap discovery take it from here (``known``). A profile may ignore
robots.txt only with a stated reason (``robots: {obey: false, reason: ...}``), logged at start.

A robots.txt answered with a server error (5xx, or 429) is asked again (``UNAVAILABLE_TRIES``, after
its ``Retry-After`` when it says one); then
the node does not start (``RobotsUnavailable``): a shop that cannot serve it asks not to be crawled for
now (RFC 9309, 2.3.1.4), and its Disallow and Crawl-delay are unknown. A 4xx, or redirects that lead
nowhere (a loop, no Location), is no robots.txt (every page allowed); a shop that does not answer at
all is left to the crawl's own download errors.
"""

from __future__ import annotations

import logging
import math
import time
import urllib.error
import urllib.request
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit
from weakref import WeakKeyDictionary

from protego import Protego

from recordhound.exceptions import RecordhoundError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from recordhound.frontier.politeness import Limits

logger = logging.getLogger(__name__)
MAX_ROBOTS_BYTES = 500_000  # read at most this much of a robots.txt (Google reads 500 KiB)
_READ: WeakKeyDictionary[Crawler, dict[str, bytes]] = WeakKeyDictionary()  # netloc -> body, per crawler
UNAVAILABLE_TRIES = 3  # a robots.txt answered 5xx or 429 is asked this often (1 s, then 2 s apart) before giving up
RETRY_AFTER_CAP_SECONDS = 30.0  # a 429's or 503's Retry-After is waited, up to this, between those tries


class RobotsUnavailable(RecordhoundError):
    """The shop answered its robots.txt with a server error, every try: no page may be fetched now."""


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


def read_robots(crawler: Crawler, base_url: str, user_agent: str, timeout: float) -> bytes | None:
    """The robots.txt body of ``base_url``'s host, downloaded once per crawler (one per process);
    None when it cannot be read (Scrapy's middleware then tries it itself)."""
    netloc = urlsplit(base_url).netloc
    bodies = _READ.setdefault(crawler, {})
    if netloc not in bodies:
        body = _download(urljoin(base_url, "/robots.txt"), user_agent, timeout)
        if body is None:
            return None
        bodies[netloc] = body
    return bodies[netloc]


def known(crawler: Crawler, netloc: str) -> bytes | None:
    """The robots.txt body this crawler already read for ``netloc`` (None: not read yet)."""
    return _READ.get(crawler, {}).get(netloc)


def _download(url: str, user_agent: str, timeout: float) -> bytes | None:
    request = urllib.request.Request(url, headers={"User-Agent": user_agent})
    for attempt in range(1, UNAVAILABLE_TRIES + 1):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the profile's shop
                return bytes(response.read(MAX_ROBOTS_BYTES))
        except urllib.error.HTTPError as exc:
            if exc.code < 500 and exc.code != 429:  # a 4xx, or redirects that lead nowhere (RFC 9309, 2.3.1.2)
                return b""  # no robots.txt: every page allowed, no Crawl-delay (as Scrapy reads a 404)
            if attempt == UNAVAILABLE_TRIES:
                raise RobotsUnavailable(
                    f"the shop's robots.txt ({url}) answered HTTP {exc.code} in {attempt} tries: a shop that cannot "
                    f"serve it asks not to be crawled for now (RFC 9309), so no page was fetched; crawl again later, "
                    f"or set robots: {{obey: false, reason: ...}} in the profile") from None
            wait = _retry_after(exc.headers.get("Retry-After"), attempt)
            logger.warning("robots.txt of %s answered HTTP %d: asked again in %g s", url, exc.code, wait)
            time.sleep(wait)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            logger.info("No robots.txt read from %s (%s): Scrapy's middleware tries it again", url, exc)
            return None
    return None  # (not reached)


def _retry_after(header: str | None, attempt: int) -> float:
    """The shop's ``Retry-After`` in seconds (capped at ``RETRY_AFTER_CAP_SECONDS``), else ``attempt`` s."""
    try:
        seconds = float(header or attempt)
    except ValueError:  # an HTTP date: waited as the default
        return float(attempt)
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_SECONDS) if math.isfinite(seconds) else float(attempt)


def sitemap_lines(body: bytes) -> list[str]:
    """The sitemap URLs a robots.txt names (``Sitemap:`` lines)."""
    return list(Protego.parse(body.decode("utf-8", "replace")).sitemaps)


def crawl_delay(body: bytes | None, user_agent: str) -> float | None:
    if not body:
        return None
    delay = Protego.parse(body.decode("utf-8", "replace")).crawl_delay(user_agent)
    return float(delay) if delay else None


def with_crawl_delay(limits: Limits, delay: float | None) -> Limits:
    """``Crawl-delay: D`` caps the shared rate at 1/D requests a second (a lower configured rate stays)."""
    if not delay:
        return limits
    ceiling = 1.0 / delay
    rate = min(limits.requests_per_second, ceiling) if limits.requests_per_second else ceiling
    return replace(limits, requests_per_second=rate)


def robots_limits(limits: Limits, spider: Any, crawler: Crawler) -> Limits:
    """The politeness limits with the shop's Crawl-delay applied (when robots.txt is obeyed)."""
    profile, settings = getattr(spider, "profile", None), crawler.settings
    if profile is None or not settings.getbool("ROBOTSTXT_OBEY") or not profile.base_url:
        return limits
    agent = settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "*"
    body = read_robots(crawler, profile.base_url, agent, settings.getfloat("DOWNLOAD_TIMEOUT"))
    delay = crawl_delay(body, agent)
    if delay:
        logger.info("robots.txt of %s: Crawl-delay %g s, so at most %.3g requests a second (all nodes)",
                    profile.base_url, delay, 1.0 / delay)
    return with_crawl_delay(limits, delay)
