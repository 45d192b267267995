"""Planner statistics the writer keeps current (PostgreSQL).

A database filled in minutes is exactly the one autovacuum has not analyzed yet (or never will,
where it is off or behind): without statistics the planner guesses, and the store's lookups
(offers by ``source_id = ? AND external_id IN (...)``, releases by key, entities by name) read whole
tables. So after each batch the writer asks PostgreSQL which product tables changed since their last
analyze (``n_mod_since_analyze``) by autovacuum's own rule, 50 rows + a tenth of the table, or by
``RECORDHOUND_STORE_ANALYZE_ROWS``, whichever is less (a large table is not left for a million
rows), and runs ANALYZE on those: a growing table is analyzed each time it grew by a tenth, about
120 times on its way to a million rows. ANALYZE samples a bounded number of rows (30,000 at the
default statistics target) and does not block writers; the check itself reads one small view.
SQLite plans these lookups by index without statistics: nothing to do there.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, text

logger = logging.getLogger(__name__)

STALE = text("SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema() "
             "AND relname = ANY(:tables) AND n_mod_since_analyze >= LEAST(:rows, 50 + n_live_tup / 10) "
             "ORDER BY relname")


class Statistics:
    """After a writer's batch: ANALYZE the tables whose statistics fell behind."""

    def __init__(self, engine: Engine, tables: list[str], most_rows: int) -> None:
        self.engine, self.tables, self.most_rows = engine, tables, most_rows  # 0: off
        self.enabled = most_rows > 0 and engine.dialect.name == "postgresql"
        self.analyzed = 0  # ANALYZE runs, for tests and stats

    def wrote(self, rows: int) -> list[str]:
        """After a batch that wrote ``rows`` items; returns the tables analyzed now."""
        if not self.enabled or rows <= 0:
            return []
        with self.engine.begin() as conn:
            found = conn.execute(STALE, {"tables": self.tables, "rows": self.most_rows}).all()
            stale = [str(row[0]) for row in found]
            for table in stale:
                conn.execute(text(f'ANALYZE "{table}"'))  # names from pg_stat_user_tables, of our own tables
        if stale:
            self.analyzed += len(stale)
            logger.debug("ANALYZE %s (planner statistics behind the writes)", ", ".join(stale))
        return stale
