"""Consecutive IDs: rows get ``max(id) + 1 ...`` under the write lock, never a sequence value.

A PostgreSQL sequence hands out a value even when the insert that took it rolls back (an
outage, a rejected row), which leaves gaps. Every writer already holds the write lock
(``engine.lock_for_writing``) for its whole transaction, so the next free id can be read
there: a rollback takes the ids back with the rows. The table's sequence is then moved to the
new maximum (``setval``), so ``max(id)`` and the sequence agree for tools that still insert
without an id. ``setval`` is not transactional: after a rollback (a kill, an outage, a refused
row) the sequence may be ahead until the next committed insert sets it back, for good on a table
that stays empty; so every process that opens the database puts each sequence back at its table's
``max(id)`` (``align_sequences``, a fresh sequence on an empty table). No row ever takes its value
from a sequence.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, insert, select, text
from sqlalchemy.orm import DeclarativeBase

from recordhound.db.models import Base


def insert_with_ids(conn: Connection, model: type[DeclarativeBase], rows: list[dict[str, Any]]) -> list[int]:
    """Insert ``rows`` (in order) with the next free ids; returns their ids. Needs the write lock."""
    if not rows:
        return []
    table = Base.metadata.tables[model.__tablename__]
    first = int(conn.execute(select(func.coalesce(func.max(table.c.id), 0))).scalar_one()) + 1
    ids = list(range(first, first + len(rows)))
    conn.execute(insert(table), [{**row, "id": row_id} for row, row_id in zip(rows, ids)])
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT setval(pg_get_serial_sequence(:table, 'id'), :last)"),
                     {"table": table.name, "last": ids[-1]})
    return ids


SEQUENCE_IDS = ("admin_users",)  # rows that take their id from the sequence, without the write lock: never moved


def align_sequences(conn: Connection) -> None:
    """PostgreSQL: each table's id sequence at its ``max(id)``, or fresh (next value 1) on an empty
    table. Needs the write lock (a writer's insert and ``setval`` cannot interleave with it)."""
    if conn.dialect.name != "postgresql":
        return
    quote = conn.dialect.identifier_preparer.quote
    for table in Base.metadata.sorted_tables:
        if "id" in table.c and table.name not in SEQUENCE_IDS:
            conn.execute(text(f"SELECT setval(pg_get_serial_sequence(:table, 'id'), coalesce(max(id), 1), "
                              f"max(id) IS NOT NULL) FROM {quote(table.name)}"), {"table": table.name})
