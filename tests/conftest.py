from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import PostgresDatabase


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test that takes this runs twice: on a SQLite file and on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'product.sqlite3'}"
        return
    with PostgresDatabase() as database:
        yield database.url
