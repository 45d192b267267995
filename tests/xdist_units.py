"""How the suite is shared out among pytest-xdist workers, and which modules run alone afterwards.

``scripts/test.sh`` runs the suite in two passes: every module not on the clock on parallel workers
(``-n 3 --dist loadfile``: a module is one unit of work, so its module-scoped fixtures, a shop or a
crawl, are built once), then the modules that measure time on a clock (due times, rates per second,
the shop's epochs, command latency) in one process with nothing else running. On a 2-core machine
those compare what happened with a clock; beside two other workers they would measure the load.
Units start slowest first, so that no long one starts last while the other workers sit idle.
"""

from __future__ import annotations

import pytest

ON_THE_CLOCK = frozenset({
    "tests/integration/test_recrawl.py",
    "tests/integration/test_retries_politeness.py",
    "tests/integration/test_frontier_meet.py",  # no Redis command of 10 ms or more
})
MARK = "on_the_clock"

# the longest units first (a full run's durations); the rest in collection order
SLOWEST_FIRST = (
    "tests/integration/test_review_bulk_browser.py",
    "tests/integration/test_alerts.py",
    "tests/integration/test_frontier_faults.py",
    "tests/integration/test_admin_jobs_browser.py",
    "tests/integration/test_admin_charts.py",
    "tests/integration/test_store_stateful.py",  # 1.5-2 min in one unit
    "tests/integration/test_store_source_calls.py",
)


def arrange(items: list[pytest.Item]) -> None:
    """Mark the clock-measuring tests (``-m on_the_clock`` selects them) and order the collection
    slowest unit first; every worker orders its own collection alike (the scheduler hands out
    positions in it), and ``loadscopereorder`` is off so the order holds."""
    rank = {module: n for n, module in enumerate(SLOWEST_FIRST)}
    for item in items:
        if item.nodeid.split("::", 1)[0] in ON_THE_CLOCK:
            item.add_marker(MARK)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
