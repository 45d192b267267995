"""Spider middleware of the frontier: start requests once per crawl, and per-response output
accounting (what each response yielded) so the scheduler acks only finished work."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy import Request

from recordhound import failpoints
from recordhound.frontier.registry import FRONTIER_ID, PARENT_ID, lookup

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)
START_WAIT_SECONDS = 0.25  # how often a node asks whether the start requests are in


class FrontierMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierMiddleware:
        return cls(crawler)

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        scheduler = lookup(self.crawler)
        if scheduler is not None:
            while (claim := scheduler.claim_start()) == "wait":
                await asyncio.sleep(START_WAIT_SECONDS)  # another live node is writing them
            if claim == "seeded":
                logger.info("Start requests of this crawl were produced before; resuming from the frontier")
                return
        async for item_or_request in start:
            yield item_or_request
        if scheduler is not None:
            scheduler.start_finished()  # every start request reached the scheduler (one at a time)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        scheduler = lookup(self.crawler)
        frontier_id = response.meta.get(FRONTIER_ID) if response.request is not None else None
        if scheduler is None or frontier_id is None:
            async for output in result:
                yield output
            return
        outcomes = scheduler.outcomes
        try:
            async for output in result:
                if isinstance(output, Request):
                    output.meta[PARENT_ID] = frontier_id  # the scheduler counts it in: ack after children
                    outcomes.child_yielded(frontier_id)
                else:
                    outcomes.item_yielded(frontier_id)
                yield output
        except Exception as exc:
            outcomes.output_finished(frontier_id, f"callback raised {type(exc).__name__}: {exc}")
            raise
        failpoints.hit("spider.output_exhausted", response.url)
        outcomes.output_finished(frontier_id)
