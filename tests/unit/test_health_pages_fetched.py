"""The "pages fetched" health check: a run that leased requests the shop never answered has failed; a redirect
is an answer (the second of two nodes, whose only lease redirected to a page the first had done, exited 1)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest


def _check(stats: dict[str, Any]) -> None:
    from recordhound.extensions.health import CrawlHealthMonitor  # here: pytest would collect the TestCase

    monitor = CrawlHealthMonitor("test_pages_were_fetched")
    monitor.data = SimpleNamespace(stats=stats, crawler=None)
    monitor.test_pages_were_fetched()


def test_a_run_whose_leases_the_shop_never_answered_fails_saying_why() -> None:
    with pytest.raises(AssertionError, match=r"fetched no page: 3 leases, none answered \(download_failed 3\)"):
        _check({"recordhound/frontier/leased": 3, "recordhound/errors/download_failed": 3})


@pytest.mark.parametrize("stats", [
    # the CI run's second node: one lease, answered 301, its target already done (dropped as seen)
    {"recordhound/frontier/leased": 1, "downloader/response_count": 1, "downloader/response_status_count/301": 1},
    {"recordhound/frontier/leased": 2, "response_received_count": 2, "downloader/response_count": 2},
    {},  # nothing leased: a node that joined a crawl with nothing left
])
def test_a_run_the_shop_answered_or_that_leased_nothing_passes(stats: dict[str, Any]) -> None:
    _check(stats)
