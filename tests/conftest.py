from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import PostgresDatabase

# Parallel runs: pyproject's addopts run the suite on pytest-xdist workers with `--dist loadgroup`.
# A module is one unit of work (its module-scoped fixtures, a shop or a crawl, are built once, on one
# worker) unless its tests name an xdist_group: the modules that measure time on a clock
# (`xdist_group("timing")`) run one test at a time on one worker. Units start slowest first (the
# order below, then collection order; `--no-loadscope-reorder`), so that no long one starts last.
SLOWEST_FIRST = (
    "timing",
    "tests/integration/test_review_bulk_browser.py",
    "tests/integration/test_alerts.py",
    "tests/integration/test_frontier_faults.py",
    "tests/integration/test_admin_jobs_browser.py",
    "tests/integration/test_admin_charts.py",
)


def _unit(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist appends the group to each test's id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_unit(item)))
    rank = {unit: n for n, unit in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(_unit(item), len(rank)))  # stable: collection order otherwise


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test that takes this runs twice: on a SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'product.sqlite3'}"
        return
    with PostgresDatabase() as database:
        yield database.url
