"""The product store's lookups on SQLite (the default store) use their indexes.

The last step of matching (a release by title, year and artists) must reach ``releases`` through
``ix_releases_names_key`` (migration 0012): one probe per item. Before, it read every stored release
of the batch's titles and years (0011), of its titles (0009), or the whole table (before 0009), and
a common title names more of them the bigger the catalogue grows."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, create_engine, event

from recordhound.db.models import Base
from recordhound.db.releases import Wanted, by_names


def _plans(wanted: list[Wanted]) -> list[str]:
    """SQLite's query plan of each statement by_names runs on the releases table."""
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    plans: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def explain(conn: Connection, cursor: object, statement: str, params: object, *_: object) -> None:
        if "FROM releases" in statement:
            rows = conn.connection.driver_connection.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
            plans.append(" | ".join(row[3] for row in rows))

    with engine.begin() as conn:
        by_names(conn, wanted)
    engine.dispose()
    return plans


@pytest.mark.parametrize("undated", [False, True], ids=["dated", "dated+undated"])
@pytest.mark.parametrize("credited", [False, True], ids=["no artists", "artists"])
def test_by_names_looks_releases_up_through_the_names_key_index_on_sqlite(undated: bool, credited: bool) -> None:
    wanted = [Wanted(None, (), f"Title {i}", 1990 + i, (i, i + 100) if credited else ()) for i in range(20)]
    wanted += [Wanted(None, (), "Undated", None, (7,) if credited else ())] if undated else []
    plans = _plans(wanted)
    assert plans == ["SEARCH releases USING INDEX ix_releases_names_key (names_key=?)"], plans
