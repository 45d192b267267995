"""The embedded frontier file gives back the space of a drained queue.

100,000 requests (about 120 bytes of JSON each) are queued through the backend, then leased and
acked until the queue is empty. What must stay is the seen-set (8 bytes a URL plus the B-tree's
overhead: about 1.5 MB) and what ``FREE_PAGES_KEPT`` keeps for the next burst (1 MiB): the file
must end under 3 MB (30 bytes per seen URL). Without incremental vacuum it kept its peak, ~16 MB.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from recordhound.frontier import sqlite_space
from recordhound.frontier.backend import Entry, Lease
from recordhound.frontier.sqlite import SqliteFrontier

URLS = 100_000
BOUND_BYTES = 3_000_000


def _fill_and_drain(frontier: SqliteFrontier) -> None:
    for start in range(0, URLS, 1000):
        frontier.commit([Entry(n.to_bytes(8, "big"), 0, '{"url": "https://shop.example/products/%d", "callback": '
                               '"parse_product", "meta": {"kind": "product"}}' % n)
                         for n in range(start, start + 1000)], [], [])
    while leased := frontier.lease("node-1", 500, 60.0):
        frontier.commit([], [Lease(row.id, row.token) for row in leased], [])


def test_drained_queue_gives_its_space_back(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    frontier = SqliteFrontier(str(path))
    frontier.open()
    _fill_and_drain(frontier)
    assert frontier.counts().done == URLS
    assert frontier.verify() == []
    frontier.close()  # the last checkpoint truncates the file to its pages
    assert os.path.getsize(path) <= BOUND_BYTES, f"{os.path.getsize(path):,} bytes after the drain"


def test_file_of_before_is_rebuilt_once_when_no_lease_is_held(tmp_path: Path) -> None:
    path = tmp_path / "frontier.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)  # a file created before incremental vacuum
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT, priority INTEGER NOT NULL, "
                "payload TEXT NOT NULL, owner TEXT, expires REAL, attempts INTEGER NOT NULL DEFAULT 0)")
    old.execute("INSERT INTO queue (priority, payload, owner, expires) VALUES (0, '{}', 'node-1', 1e12)")
    old.close()
    frontier = SqliteFrontier(str(path))
    frontier.open()  # a lease is held: a node may be mid-crawl, not now
    assert _auto_vacuum(path) == 0
    frontier.release(frontier.leases_of("node-1"))
    frontier.close()
    frontier.open()
    frontier.close()
    assert _auto_vacuum(path) == sqlite_space.INCREMENTAL
    frontier.open()
    _fill_and_drain(frontier)
    frontier.close()
    assert os.path.getsize(path) <= BOUND_BYTES


def _auto_vacuum(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("PRAGMA auto_vacuum").fetchone()[0])
    finally:
        db.close()
