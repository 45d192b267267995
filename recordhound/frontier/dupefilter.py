"""The frontier's dupefilter: compact 8-byte fingerprints, kept by the frontier backend.

The scheduler marks a fingerprint seen in the same atomic step that queues its request;
"seen" never means "done" (a leased request that was never acked is crawled again).
A request sent again on purpose (a product whose sitemap ``lastmod`` moved) carries a salt in its meta
(``FINGERPRINT_SALT_META``): its fingerprint is the URL's with the salt, seen once per salt, so the
same read of the sitemap, expanded again after a kill, queues it once.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

from scrapy import Request

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
FINGERPRINT_BYTES = 8  # 64 bits: about 1 collision in 3 million crawls of 10 million URLs
FINGERPRINT_SALT_META = "recordhound_fingerprint_salt"  # str: the request is one more fetch of its URL, once per salt


class FrontierDupeFilter:
    def __init__(self, crawler: Crawler, debug: bool) -> None:
        self.fingerprinter = crawler.request_fingerprinter
        self.debug = debug
        self._logged = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierDupeFilter:
        return cls(crawler, crawler.settings.getbool("DUPEFILTER_DEBUG"))

    def fingerprint(self, request: Request) -> bytes:
        fingerprint = self.fingerprinter.fingerprint(request)
        if (salt := request.meta.get(FINGERPRINT_SALT_META)) is not None:
            return hashlib.blake2b(fingerprint + salt.encode(), digest_size=FINGERPRINT_BYTES).digest()
        return fingerprint[:FINGERPRINT_BYTES]

    def log(self, request: Request) -> None:
        if self.debug:
            logger.debug("Filtered duplicate request: %s", request)
        elif not self._logged:
            logger.debug("Filtered duplicate request: %s - no more duplicates will be shown "
                         "(see DUPEFILTER_DEBUG to show all duplicates)", request)
            self._logged = True

    def open(self) -> None:
        pass

    def close(self, reason: str) -> None:
        pass
