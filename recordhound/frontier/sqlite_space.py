"""Space of the embedded frontier file: a drained queue gives its pages back to the disk.

A crawl's queue peaks and then drains; without this the file keeps its peak size for good (a
200,000-page crawl left ~16 MB, ~14 of them free pages, for a seen-set of ~1.5 MB). New files are
created with ``auto_vacuum = INCREMENTAL``; after a commit that deleted rows, the free pages above
``FREE_PAGES_KEPT`` (kept for the next burst) are given back, at most ``PAGES_PER_STEP`` per call so
the call stays short on the reactor thread. A file from before (``auto_vacuum = NONE``) is rebuilt
once with ``VACUUM`` when it is opened while no lease is held (no node is mid-crawl on it); if
another process holds the write lock, it is tried again at the next open.
"""

from __future__ import annotations

import logging
import sqlite3

logger = logging.getLogger(__name__)

INCREMENTAL = 2  # PRAGMA auto_vacuum value
FREE_PAGES_KEPT = 256  # free pages kept for the next burst of requests (4 KiB pages: 1 MiB)
PAGES_PER_STEP = 2048  # most pages given back by one call (8 MiB: a few ms of page moves)


def prepare_new(db: sqlite3.Connection) -> None:
    """Before anything else on a new connection: a file without tables is created incremental
    (the mode cannot be set once a table exists, nor after WAL is on; a no-op then)."""
    db.execute("PRAGMA auto_vacuum = INCREMENTAL")


def convert_old(db: sqlite3.Connection, path: str) -> bool:
    """Rebuild a file of before incremental vacuum, once, when no lease is held. Returns whether it
    was rebuilt (False: already incremental, or not now)."""
    if db.execute("PRAGMA auto_vacuum").fetchone()[0] == INCREMENTAL:
        return False
    if db.execute("SELECT 1 FROM queue WHERE owner IS NOT NULL LIMIT 1").fetchone() is not None:
        logger.info("frontier file %s is not incremental yet: rebuilt at an open while no lease is held", path)
        return False
    try:
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        db.execute("VACUUM")
    except sqlite3.OperationalError as exc:  # another process writes: next open
        logger.info("frontier file %s not rebuilt for incremental vacuum now (%s)", path, exc)
        return False
    logger.info("frontier file %s rebuilt: it now gives back the space of a drained queue", path)
    return True


def give_back(db: sqlite3.Connection) -> int:
    """Free pages above what is kept go back to the disk. Returns how many pages were given back
    (0 when there were few, or another process held the write lock: the next commit tries again)."""
    free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
    if free <= FREE_PAGES_KEPT:
        return 0
    pages = min(free - FREE_PAGES_KEPT, PAGES_PER_STEP)
    try:
        # executescript steps the statement to its end; execute() would give back a single page
        db.executescript(f"PRAGMA incremental_vacuum({pages})")
    except sqlite3.OperationalError:
        return 0  # busy: a cleanup, never worth failing a commit that already succeeded
    return pages
