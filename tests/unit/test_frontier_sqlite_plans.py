"""The embedded frontier's hot statements use their indexes at any queue depth.

Every statement the backend runs while enqueueing, leasing, acking, failing, renewing and
reclaiming (captured with SQLite's trace callback, values bound) is explained with EXPLAIN
QUERY PLAN on a queue of 200,000 rows, before and after the file has planner statistics: none
may read the queue or the seen-set row by row, nor sort in a temporary B-tree. An index change
that makes leasing O(queue) again fails here, not in a week-long crawl.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from recordhound.frontier.backend import Entry, Failure, Lease
from recordhound.frontier.sqlite import SqliteFrontier

QUEUED = 200_000


def _filled(path: Path) -> SqliteFrontier:
    frontier = SqliteFrontier(str(path))
    frontier.open()
    db = frontier._db
    assert db is not None
    db.execute("BEGIN")
    db.executemany("INSERT INTO queue (priority, payload) VALUES (?, ?)",
                   ((n % 3, f'{{"url": "https://shop.example/{n}"}}') for n in range(QUEUED)))
    db.executemany("INSERT INTO seen VALUES (?)", ((n.to_bytes(8, "big"),) for n in range(QUEUED)))
    db.execute("INSERT INTO counters VALUES ('queued', ?), ('seen', ?)", (QUEUED, QUEUED))
    db.execute("COMMIT")
    return frontier


def _hot_path(frontier: SqliteFrontier) -> list[str]:
    """The statements of one round of a crawl's traffic, as run (values bound)."""
    db = frontier._db
    assert db is not None
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    leased = frontier.lease("node-1", 16, 60.0)
    entries = [Entry((QUEUED + n).to_bytes(8, "big"), 1, f'{{"url": "https://shop.example/new/{n}"}}')
               for n in range(20)]
    leases = [Lease(row.id, row.token) for row in leased]
    frontier.renew("node-1", leases, 60.0)
    frontier.commit(entries, leases[:8], [Failure(leases[8], "timeout", retry_in=0.0),
                                          Failure(leases[9], "gone")])
    frontier.lease("node-1", 16, 60.0)  # takes the due retry back into line first
    frontier.lease("node-1", 16, 60.0, fresh_only=True)  # a node trying a suspect
    frontier.reclaim_expired()
    frontier.reclaim_node("node-2")
    frontier.release(leases[10:])
    db.set_trace_callback(None)
    return [s for s in statements if not s.upper().startswith(("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA"))]


def _bad_steps(db: sqlite3.Connection, statement: str) -> list[str]:
    steps = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {statement}")]
    return [step for step in steps
            if "TEMP B-TREE" in step
            or (step.startswith(("SCAN queue", "SCAN seen")) and step != "SCAN queue USING INDEX queue_ready")]


@pytest.mark.parametrize("statistics", [False, True], ids=["fresh", "analyzed"])
def test_hot_statements_use_indexes(tmp_path: Path, statistics: bool) -> None:
    frontier = _filled(tmp_path / "frontier.sqlite3")
    db = frontier._db
    assert db is not None
    if statistics:
        db.execute("ANALYZE")
    statements = _hot_path(frontier)
    assert any("INDEXED BY queue_ready" in s or "FROM queue" in s for s in statements)
    bad = {s: steps for s in statements if (steps := _bad_steps(db, s))}
    frontier.close()
    assert not bad, "statements that walk or sort the queue:\n" + "\n".join(f"{s}\n  {v}" for s, v in bad.items())


def test_ready_index_serves_leasing_without_a_sort(tmp_path: Path) -> None:
    """The index leasing is forced onto still orders the way leasing needs: a change to one
    without the other is caught (INDEXED BY on an index that cannot serve the ORDER BY sorts)."""
    frontier = _filled(tmp_path / "frontier.sqlite3")
    db = frontier._db
    assert db is not None
    steps = [row[3] for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM queue INDEXED BY queue_ready WHERE owner IS NULL AND scheduled = 0 "
        "ORDER BY priority DESC, id LIMIT 16")]
    frontier.close()
    assert steps == ["SCAN queue USING INDEX queue_ready"]
