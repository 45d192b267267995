"""How the suite is shared out among pytest-xdist workers (``--dist loadfile``, in pyproject's addopts).

A test module is one unit of work, run on one worker: its module-scoped fixtures (a shop, a crawl) are
built once. The modules that measure time on a clock (due times, rates per second, lease expiry) form
one unit together, so that they run one test at a time rather than beside each other. Units start
slowest first, so that no long one starts last while the other workers sit idle.

pytest 9.2 no longer lets pytest-xdist 3.8 add ``xdist_group`` names to test ids (``--dist loadgroup``
then shares out single tests), so the grouping is done here, from the module paths.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

# measured on the clock while several processes run: one test at a time, on one worker
ON_THE_CLOCK = frozenset({
    "tests/integration/test_recrawl.py",
    "tests/integration/test_retries_politeness.py",
})
TIMING = "timing"

# the longest units first (a full run's durations); the rest in collection order
SLOWEST_FIRST = (
    TIMING,
    "tests/integration/test_review_bulk_browser.py",
    "tests/integration/test_alerts.py",
    "tests/integration/test_frontier_faults.py",
    "tests/integration/test_admin_jobs_browser.py",
    "tests/integration/test_admin_charts.py",
)


def unit_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return TIMING if module in ON_THE_CLOCK else module


class ModuleUnits(LoadFileScheduling):
    """``--dist loadfile``, with the clock-measuring modules as one unit (their order: tests/conftest.py)."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


def slowest_first(nodeids: list[str]) -> list[str]:
    """The collection in the order its units are handed out (stable: collection order otherwise); every
    worker sorts its own collection this way, since the scheduler sends positions in that list."""
    rank = {unit: n for n, unit in enumerate(SLOWEST_FIRST)}
    return sorted(nodeids, key=lambda nodeid: rank.get(unit_of(nodeid), len(rank)))
