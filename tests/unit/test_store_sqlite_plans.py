"""The product store's lookups on SQLite (the default store) use their indexes.

SQLite does not use an index for a row-value ``(a, b) IN (VALUES ...)``: the last step of matching
(a release by title, year and artists) must still reach ``releases`` through both columns of
``ix_releases_title_year`` (migration 0011), or every batch reads the whole table (before 0009)
or every stored release of each title (before 0011: a common title names more of them the bigger
the catalog grows)."""

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
def test_by_names_looks_releases_up_through_the_title_index_on_sqlite(undated: bool) -> None:
    wanted = [Wanted(None, (), f"Title {i}", 1990 + i, ()) for i in range(20)]
    wanted += [Wanted(None, (), "Undated", None, ())] if undated else []
    plans = _plans(wanted)
    assert len(plans) == (2 if undated else 1), plans
    assert all("USING INDEX ix_releases_title_year (title=? AND year=?)" in plan for plan in plans), plans
