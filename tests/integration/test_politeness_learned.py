"""A shop that answers 429 slows the crawl down though no politeness rate is configured: the host's
rate is learned from the 429s (``frontier/politeness.py``), on the embedded frontier and on Redis
with two nodes; no page ends dead-lettered as ``http_429``. A shop that only answers 503 now and
then teaches nothing. Real crawler processes against the demo shop's throttled mode; each crawl is
compared with the shop's truth."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from recordhound.demo.process import ShopProcess
from recordhound.frontier.hostgate import LEARNED_STAT
from tests.integration.crawlers import Crawler, CrawlSetup
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import PostgresDatabase, redis_url

QUICK_RETRIES = ("RECORDHOUND_RETRY_BASE_SECONDS=0.5", "RECORDHOUND_RETRY_CAP_SECONDS=2")
RELEASES, SHOP_RATE = 250, 20  # the shop answers 429 above 20 requests started in one second
# Nothing about politeness is configured: no rate, no concurrency (the defaults), adaptive on.
# Without a learned rate, 32 requests in flight get most pages refused on every attempt: the code
# before drew 641-983 429s for these 293 pages and dead-lettered 69-117 as http_429 (the crawl failed
# its health check); with the learned rate 27-115 (2026-12-07), near the shop's 20 pages a second;
# with only 429s learning and a ceiling that grows again, 23-87 (three runs each, 2026-12-07).
MAX_429 = 200


@pytest.fixture
def product_db() -> Iterator[str]:
    with PostgresDatabase() as database:
        yield database.url


def _learned_ceiling(setup: CrawlSetup, shop_url: str) -> float:
    client = redis.Redis.from_url(setup.redis_url)
    try:
        return float(client.hget(f"{setup.prefix}:hosts:{{{shop_url.split('/')[2]}}}", "ceiling") or 0)
    finally:
        client.close()


def _log(setup: CrawlSetup, name: str) -> str:
    return (setup.workdir / f"{name}.log").read_text()[-4000:]


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_a_shop_that_answers_429_gets_a_learned_rate_and_no_page_is_lost(
    kind: str, tmp_path: Path, product_db: str,
) -> None:
    with ShopProcess(RELEASES, seed=61, throttle=("--rate", str(SHOP_RATE))) as shop:
        setup = CrawlSetup(tmp_path, shop.url, product_db, redis_url() if kind == "redis" else "")
        nodes: list[Crawler] = []
        try:
            started = time.monotonic()
            names = ["crawl"] if kind == "embedded" else ["node0", "node1"]
            nodes += [setup.start(*QUICK_RETRIES, "CONCURRENT_REQUESTS=32", name=name) for name in names]
            exits = [node.wait(300) for node in nodes]
            refused = shop.stats()["refused"].get("429", 0)
            print(f"{kind}: {refused} requests refused with 429, {shop.pages_served()} pages served, "
                  f"{time.monotonic() - started:.1f} s")
            assert exits == [0] * len(nodes), _log(setup, names[0])  # a crawl with dead letters fails its health
            assert all(node.stats().get("response_received_count", 0) > 0 for node in nodes)
            assert_crawl_matches_truth(setup, shop.truth())  # no http_429 dead letter
            assert refused <= MAX_429, refused
            assert sum(node.stats().get(LEARNED_STAT, 0) for node in nodes) >= 1
            if kind == "redis":  # the learned rate is the host's, in Redis, shared by both nodes
                ceiling = _learned_ceiling(setup, shop.url)
                print(f"learned ceiling {ceiling:.1f} requests a second")
                assert ceiling >= SHOP_RATE / 2, ceiling
        finally:
            for node in nodes:
                node.ensure_stopped()
            setup.cleanup()


def test_a_shop_whose_pages_answer_503_for_a_while_teaches_no_rate(tmp_path: Path) -> None:
    # every 7th product page answers 503 to its first two requests; never a 429
    with ShopProcess(120, seed=52, throttle=("--unavailable-every", "7", "--unavailable-times", "2")) as shop:
        setup = CrawlSetup(tmp_path, shop.url, f"sqlite:///{tmp_path / 'product.sqlite3'}")  # embedded frontier
        crawler = setup.start(*QUICK_RETRIES)
        assert crawler.wait(300) == 0, _log(setup, "crawl")
        refused = shop.stats()["refused"]
        assert refused.get("503", 0) > 0 and "429" not in refused, refused
        assert crawler.stats().get(LEARNED_STAT, 0) == 0  # no host learned a rate: the crawl stayed unpaced
        assert_crawl_matches_truth(setup, shop.truth())
