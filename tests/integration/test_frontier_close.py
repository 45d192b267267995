"""A node killed at its close's write-back (``frontier/closing.py``): its outcomes written and its
leases returned, the node still registered in the crawl. Real crawls as subprocesses on the shared
Redis frontier, SQLite and PostgreSQL product DBs, each resumed crawl compared with the shop's truth
(offers field by field, ``failed`` only the shop's fault pages, IDs and PostgreSQL sequences), and
no politeness slot left held in Redis: the crawls run with a per-host limit (``POLITE``) and a long
download timeout, so a slot left by the killed node would stall the resumed one, not only be seen."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, wait_for_pages, wait_logged
from tests.integration.truthcheck import assert_crawl_matches_truth
from tests.services import redis_url

POLITE = ("RECORDHOUND_POLITENESS_CONCURRENCY=2", "DOWNLOAD_TIMEOUT=120")


@pytest.mark.parametrize("reason", ["finished", "shutdown"])
def test_a_node_killed_after_its_close_returned_its_leases_loses_nothing(reason: str, database_url: str,
                                                                          tmp_path: Path) -> None:
    """finished: the crawl's own end; shutdown: a graceful stop mid-crawl (its unstarted leases are
    returned, then the kill). The registration left behind is a dead node's: the next node (the same
    node id) takes it over and completes the crawl."""
    with ShopProcess(200 if reason == "shutdown" else 40, seed=93, throttle=("--latency", "0.05")) as shop:
        setup = CrawlSetup(tmp_path, shop.url, database_url, redis_url())
        try:
            node = setup.start(*POLITE, name="killed", failpoints="frontier.close_released=kill")
            try:
                if reason == "shutdown":
                    wait_for_pages(shop, 30)
                    node.signal(signal.SIGINT)
                    wait_logged(setup, "killed", node, "Closing spider (shutdown)")
                assert node.wait(120) == -signal.SIGKILL, setup.log("killed")[-3000:]
            finally:
                node.ensure_stopped()
            assert "Frontier closed" not in setup.log("killed")
            assert setup.start(*POLITE, name="resumed").wait(300) == 0, setup.log("resumed")[-3000:]
            assert_crawl_matches_truth(setup, shop.truth())
            assert setup.slots_held() == {}, "politeness slots left held after the resumed crawl"
        finally:
            setup.cleanup()
