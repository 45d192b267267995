"""The engine's pause owner, a batch that gives up after an outage, and SQLite transactions that
never stay open (each a confirmed review finding of the frontier rebuild)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from recordhound.pipelines.batcher import Backlog, Batcher
from recordhound.sqlite_tx import immediate


def test_a_batch_that_fails_for_good_after_an_outage_resumes_the_crawl() -> None:
    reasons: set[str] = set()  # what the pause owner holds (the real one needs a running engine)
    calls = 0

    async def write(items: list[Any]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("the database went away")
        raise ValueError("a bad batch once it came back")

    async def run() -> None:
        batcher: Batcher[Any, None] = Batcher(
            write, 1, 60, lambda _: None, lambda exc: isinstance(exc, ConnectionError),
            lambda: reasons.add("product store"), lambda: reasons.discard("product store"), 0.05)
        with pytest.raises(ValueError):
            await batcher.add({"x": 1})

    asyncio.run(run())
    assert calls == 2 and reasons == set()  # paused during the outage, not forever after


def test_a_stored_batch_whose_counting_fails_still_settles_its_items(caplog: pytest.LogCaptureFixture) -> None:
    """The batch committed, then counting it raised (a bug of the stats' side): its items are
    stored all the same, so they are settled (their pages acked), the error logged; before, their
    futures were never resolved and the crawl waited on them for ever."""
    stored: list[Any] = []

    async def write(items: list[Any]) -> int:
        stored.extend(items)
        return len(items)

    def count(_: int) -> None:
        raise KeyError("a counter")

    async def run() -> None:
        batcher: Batcher[Any, int] = Batcher(write, 2, 60, count, lambda exc: False, lambda: None, lambda: None, 0.05)
        batcher.start()
        await asyncio.wait_for(asyncio.gather(batcher.add("a"), batcher.add("b")), 10)
        await batcher.close()

    asyncio.run(run())
    assert stored == ["a", "b"]
    assert "Could not count a stored batch of 2 items" in caplog.text


def test_a_commit_that_fails_leaves_no_transaction_open(tmp_path: Path) -> None:
    path = tmp_path / "tx.sqlite3"
    writer = sqlite3.connect(path, timeout=0, isolation_level=None)
    writer.execute("PRAGMA journal_mode=DELETE")  # a reader blocks the commit (WAL would not)
    writer.execute("CREATE TABLE t (x)")
    reader = sqlite3.connect(path, timeout=0, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM t").fetchall()  # a shared lock until its transaction ends
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        with immediate(writer) as db:
            db.execute("INSERT INTO t VALUES (1)")
    assert not writer.in_transaction
    reader.execute("COMMIT")
    with immediate(writer) as db:  # the next transaction starts normally
        db.execute("INSERT INTO t VALUES (2)")
    assert writer.execute("SELECT x FROM t").fetchall() == [(2,)]


def test_a_store_behind_pauses_at_the_bound_and_resumes_at_half_with_one_write_task() -> None:
    events: list[tuple[str, int]] = []
    gate = asyncio.Event()

    async def write(items: list[Any]) -> None:
        await gate.wait()  # the store is behind until the test lets it write

    async def run() -> None:
        batcher: Batcher[Any, None] = Batcher(write, 2, 60, lambda _: None, lambda exc: False,
                                              lambda: None, lambda: None, 0.05)
        batcher.backlog = Backlog(6, lambda: events.append(("hold", batcher.waiting)),
                                  lambda: events.append(("release", batcher.waiting)))
        futures = [batcher.add(n) for n in range(8)]  # 8 items: 4 full batches
        await asyncio.sleep(0)
        tasks = len(asyncio.all_tasks())
        assert events == [("hold", 6)] and batcher.waiting == 8
        gate.set()
        await asyncio.gather(*futures)
        assert events == [("hold", 6), ("release", 2)] and batcher.waiting == 0
        assert tasks <= 2  # this coroutine and one writing task, not one task per item added

    asyncio.run(run())
