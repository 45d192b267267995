"""Sitemaps as a source of product URLs: urlsets, sitemap indexes, gzipped files (Scrapy's own
``scrapy.utils.sitemap.Sitemap`` reads the XML, ``scrapy.utils.gz.gunzip`` the ``.gz``).

Each product URL carries its ``lastmod`` into the request (``LASTMOD_META``), and the request's
fingerprint includes it (``recordhound.fingerprint``): when the sitemap is checked again, a page
whose ``lastmod`` has not moved is already in the frontier and is not fetched again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scrapy.http import Response
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from recordhound.exceptions import FieldError
from recordhound.sources.profile import SitemapSpec

LASTMOD_META = "recordhound_lastmod"
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # the sitemaps.org limit for one file, uncompressed


@dataclass(frozen=True)
class Entry:
    url: str
    lastmod: str | None


@dataclass(frozen=True)
class Read:
    index: bool  # a sitemap index: its entries are sitemaps
    entries: list[Entry]


def read_sitemap(response: Response) -> Read:
    """The sitemap's entries; raises FieldError when the body is not a sitemap."""
    body = response.body
    if body[:2] == b"\x1f\x8b":
        try:
            body = gunzip(body, max_size=MAX_SITEMAP_BYTES)
        except (OSError, ValueError) as exc:
            raise FieldError(f"cannot gunzip the sitemap: {exc}") from exc
    try:
        sitemap = Sitemap(body)
    except Exception as exc:  # lxml raises its own error types
        raise FieldError(f"not a sitemap: {type(exc).__name__}: {str(exc)[:120]}") from exc
    if sitemap.type not in ("sitemapindex", "urlset"):
        raise FieldError(f"not a sitemap: its root element is <{sitemap.type}>")
    entries = [Entry(response.urljoin(e["loc"]), e.get("lastmod")) for e in sitemap if e.get("loc")]
    return Read(sitemap.type == "sitemapindex", entries)


def wanted(spec: SitemapSpec, url: str) -> bool:
    """A product URL the profile follows: matches ``follow`` (any, or none given) and no ``deny``."""
    if spec.deny and any(re.search(p, url) for p in spec.deny):
        return False
    return not spec.follow or any(re.search(p, url) for p in spec.follow)
