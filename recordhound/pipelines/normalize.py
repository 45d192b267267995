"""Normalize pipeline: RawRelease → Release; field errors recorded, unusable items dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem

from recordhound.errors import record_error
from recordhound.items import RawRelease
from recordhound.normalize import normalize_release

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class NormalizePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NormalizePipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, RawRelease):
            return item
        outcome = normalize_release(item, self.crawler.spider.profile)  # type: ignore[union-attr]  # the catalog spider
        for problem in outcome.problems:
            record_error(self.crawler, f"field_{problem.field}", problem.url, problem.reason)
        if outcome.release is None:
            record_error(self.crawler, "rejected", item.url, outcome.rejected or "rejected")
            raise DropItem(f"rejected {item.url}: {outcome.rejected}")
        return outcome.release
