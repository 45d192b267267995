"""The frontier's dupefilter: compact 8-byte fingerprints, kept by the frontier backend.

The scheduler marks a fingerprint seen in the same atomic step that queues its request;
"seen" never means "done" (a leased request that was never acked is crawled again).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
FINGERPRINT_BYTES = 8  # 64 bits: about 1 collision in 3 million crawls of 10 million URLs


class FrontierDupeFilter:
    def __init__(self, crawler: Crawler, debug: bool) -> None:
        self.fingerprinter = crawler.request_fingerprinter
        self.debug = debug
        self._logged = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierDupeFilter:
        return cls(crawler, crawler.settings.getbool("DUPEFILTER_DEBUG"))

    def fingerprint(self, request: Request) -> bytes:
        return self.fingerprinter.fingerprint(request)[:FINGERPRINT_BYTES]

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
