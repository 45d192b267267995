from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import PostgresDatabase


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
