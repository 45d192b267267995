from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.services import PostgresDatabase


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (pyproject's addopts) shares modules out as tests/xdist_units.py says."""
    if config.getoption("dist") != "loadfile":
        return None
    from tests.xdist_units import ModuleUnits

    config.option.loadscopereorder = False  # the collection's order (below), not the number of tests per unit
    return ModuleUnits(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from tests.xdist_units import slowest_first

    order = {nodeid: n for n, nodeid in enumerate(slowest_first([item.nodeid for item in items]))}
    items.sort(key=lambda item: order[item.nodeid])


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test that takes this runs twice: on a SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'product.sqlite3'}"
        return
    with PostgresDatabase() as database:
        yield database.url
