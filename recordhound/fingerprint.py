"""Request fingerprints with a sitemap's ``lastmod``: a product URL found in a sitemap is one
request per ``lastmod``, so re-reading the sitemap queues only the pages that moved (the
frontier's seen-set drops the others)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter

from recordhound.sources.sitemaps import LASTMOD_META

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class LastmodFingerprinter:
    """Scrapy's fingerprint, mixed with ``meta["recordhound_lastmod"]`` when a request has one."""

    def __init__(self, crawler: Crawler | None = None) -> None:
        self._default = RequestFingerprinter(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LastmodFingerprinter:
        return cls(crawler)

    def fingerprint(self, request: Request) -> bytes:
        found = self._default.fingerprint(request)
        lastmod = request.meta.get(LASTMOD_META)
        if not lastmod:
            return found
        return hashlib.sha1(found + b"|" + str(lastmod).encode(), usedforsecurity=False).digest()
