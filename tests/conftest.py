from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.services import PostgresDatabase

# No test asserts on time: Hypothesis's per-example deadline (200 ms) failed a property test in CI whose
# first example paid for lazy imports on a busy 2-core machine (311 ms, then 16 ms).
settings.register_profile("recordhound", deadline=None)
settings.load_profile("recordhound")


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.option.loadscopereorder = False  # the collection's order (slowest first), not tests per unit


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from tests.xdist_units import arrange

    arrange(items)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test that takes this runs twice: on a SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'product.sqlite3'}"
        return
    with PostgresDatabase() as database:
        yield database.url
