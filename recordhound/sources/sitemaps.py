"""Sitemaps as a source of product URLs: urlsets, sitemap indexes, gzipped files (Scrapy's own
``scrapy.utils.sitemap.Sitemap`` reads the XML). A sitemap whose XML or gzip stream is cut off is
an error naming it (``CutOffError``), never read as if it were whole.

A product request's fingerprint is its URL's (Scrapy's), so a product both linked from a listing
and named in a sitemap is fetched once. The sitemap keeps each product's ``lastmod`` in its own
recheck state (``recrawl.LASTMODS``): when it is read again, a product whose ``lastmod`` moved is
requested again (``since`` says MOVED), one whose ``lastmod`` stands is not requested at all.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from lxml import etree
from scrapy.http import Response
from scrapy.utils.sitemap import Sitemap

from recordhound.exceptions import CutOffError, FieldError
from recordhound.sources.profile import SitemapSpec

NEW, MOVED, STANDS = "new", "moved", "stands"  # an entry against the sitemap's last read
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # the sitemaps.org limit for one file, uncompressed
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Entry:
    url: str
    lastmod: str | None


@dataclass(frozen=True)
class Read:
    index: bool  # a sitemap index: its entries are sitemaps
    entries: list[Entry]


def read_sitemap(response: Response) -> Read:
    """The sitemap's entries. Raises CutOffError when its XML or its gzip stream ends before the
    document does (none of its entries is trusted then), FieldError when the body is no sitemap."""
    body = _gunzip(response.body, response.url) if response.body[:2] == GZIP_MAGIC else response.body
    try:
        sitemap = Sitemap(body)
    except Exception as exc:  # lxml raises its own error types; an empty body: StopIteration
        raise FieldError(f"sitemap {response.url} is not a sitemap: {type(exc).__name__}: {str(exc)[:120]}") from exc
    if sitemap.type not in ("sitemapindex", "urlset"):
        raise FieldError(f"sitemap {response.url} is not a sitemap: its root element is <{sitemap.type}>")
    entries = [Entry(response.urljoin(e["loc"]), e.get("lastmod")) for e in sitemap if e.get("loc")]
    broken = [e for e in sitemap.xmliter.error_log if e.level >= etree.ErrorLevels.ERROR]  # lxml recovers silently
    if broken:
        raise CutOffError(f"sitemap {response.url}: its XML is broken or cut off at line {broken[0].line}, "
                          f"column {broken[0].column} ({broken[0].message}); none of the {len(entries)} "
                          "entries read before it is followed")
    return Read(sitemap.type == "sitemapindex", entries)


def _gunzip(data: bytes, url: str) -> bytes:
    """The gzip stream's content, all of it or an error (Scrapy's ``gunzip`` returns what it could
    read of a truncated or corrupt stream as if it were whole)."""
    out, size = [], 0
    while data:
        stream = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while data and not stream.eof:
                chunk = stream.decompress(data, MAX_SITEMAP_BYTES + 1 - size)
                data, size = stream.unconsumed_tail, size + len(chunk)
                out.append(chunk)
                if size > MAX_SITEMAP_BYTES:
                    raise FieldError(f"sitemap {url} is larger than {MAX_SITEMAP_BYTES} bytes unzipped")
        except zlib.error as exc:
            raise CutOffError(f"sitemap {url}: its gzip data is corrupt after {size} bytes unzipped: {exc}") from exc
        if not stream.eof:
            raise CutOffError(f"sitemap {url}: its gzip data is truncated: it ends after {size} bytes unzipped, before its end")
        data = stream.unused_data.lstrip(b"\0")  # another gzip member may follow (padding aside)
    return b"".join(out)


def since(known: dict[str, str] | None, entry: Entry) -> str:
    """``entry`` against the lastmods the sitemap's last read kept: NEW (not among them, or no lastmod
    to compare: requested, and dropped by the frontier if seen), MOVED (fetch it again), STANDS (skip)."""
    before = (known or {}).get(entry.url)
    if before is None or entry.lastmod is None:
        return NEW
    return STANDS if before == entry.lastmod else MOVED


def wanted(spec: SitemapSpec, url: str) -> bool:
    """A product URL the profile follows: matches ``follow`` (any, or none given) and no ``deny``."""
    if spec.deny and any(re.search(p, url) for p in spec.deny):
        return False
    return not spec.follow or any(re.search(p, url) for p in spec.follow)
