"""The store's writer process dying: real spawned writers, a real SQLite product DB and review queue.

- One that dies while starting (its engine cannot be made) is no batch's doing: the batch waits
  whole, as in an outage, never written one item at a time, no item rejected.
- One that crashes on what it was sent exits with code 1 and its traceback (not the quick exit of a
  writer told to stop), and is replaced.
- One killed by any signal, a real-time one included, is replaced; the batch is then written.
- A batch it died on twice is written one item at a time, the last of each external id only (as
  the writer keeps them): a fatal older duplicate is neither written nor rejected over the newer.
- Items that each kill it alone are rejected, even when the batch holds nothing else, once the
  writer survives a test write; one that dies whatever it writes (here: at every INSERT or UPDATE,
  the test write's included) rejects no item: the batch waits whole, as in an outage."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from concurrent.futures import BrokenExecutor
from decimal import Decimal
from pathlib import Path

import pytest
from scrapy.settings import Settings
from sqlalchemy import text

from recordhound.config import ReviewConfig, StoreConfig
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.db.sources import ensure_source
from recordhound.items import Release
from recordhound.pipelines.writer_process import WriterProcess
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue

LOGGER = "recordhound.pipelines.writer_process"
# every write of the writer's product DB ends its process (sitecustomize runs in each new Python)
DIES_AT_EVERY_WRITE = """import os
from sqlalchemy import event
from sqlalchemy.engine import Engine


def _die_writing(conn, cursor, statement, *args):
    if statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
        os._exit(75)


event.listen(Engine, "before_cursor_execute", _die_writing)
"""


def _raise_value_error() -> None:
    raise ValueError("this value cannot be read here")


class Unreadable:
    """Sent to the writer, it makes the writer's own loop fail reading the call (not the call itself)."""

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_raise_value_error, ())


class Fatal(Decimal):
    """A price that ends the process reading it (exit code 70), as a crash in a driver would."""

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os._exit, (70,))


def _release(sku: str, title: str, price: Decimal = Decimal("9.99"), path: str = "") -> Release:
    return Release(source="demo", url=f"http://127.0.0.1/release/{path or sku}", external_id=sku, title=title,
                   artists=["Someone"], price=price, currency="EUR")


def _settings(tmp_path: Path) -> Settings:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    settings.set("RECORDHOUND_DATABASE_URL", f"sqlite:///{tmp_path / 'product.sqlite3'}")
    settings.set("RECORDHOUND_REVIEW_PATH", str(tmp_path / "review.sqlite3"))
    return settings


def _writer(settings: Settings) -> tuple[WriterProcess, int]:
    store = StoreConfig.from_settings(settings)
    engine = make_engine(store.database_url)
    try:
        upgrade(engine)
        source_id = ensure_source(engine, "demo", "html", "http://127.0.0.1/")
    finally:
        engine.dispose()
    return WriterProcess(store, ReviewConfig.from_settings(settings), trusted=True), source_id


def _tries(writer: WriterProcess, source_id: int, batch: list[Release], times: int = 4) -> list[str]:
    """The batcher's retries of one batch: "written" or "waits" (the writer died: retried later)."""
    async def run() -> list[str]:
        writer.start()
        outcomes = []
        for _ in range(times):
            try:
                await writer.write(source_id, batch)
                outcomes.append("written")
            except BrokenExecutor:
                outcomes.append("waits")
        await writer.close()
        return outcomes
    return asyncio.run(run())


def _stored(tmp_path: Path) -> list[tuple[str, str]]:
    engine = make_engine(f"sqlite:///{tmp_path / 'product.sqlite3'}")
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(  # type: ignore[misc]
                "SELECT o.external_id, r.title FROM offers o JOIN releases r ON r.id = o.release_id ORDER BY 1")).all()]
    finally:
        engine.dispose()


def _rejected(tmp_path: Path) -> list[str]:
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    try:
        return [doc["key"] for doc in queue.rejected()]
    finally:
        queue.close()


def _spawned_children() -> list[int]:
    found = []
    for pid in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split():
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_writer_that_dies_starting_never_rejects_the_batch_s_items(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    settings = _settings(tmp_path)
    writer, source_id = _writer(settings)
    # its engine cannot be made: a port that is no number (a driver that is not installed is refused before
    # that, by the settings' check)
    starts_badly = _settings(tmp_path)
    starts_badly.set("RECORDHOUND_DATABASE_URL", "postgresql+psycopg://127.0.0.1:notaport/catalog")
    writer = WriterProcess(StoreConfig.from_settings(starts_badly), ReviewConfig.from_settings(settings), trusted=True)
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        assert _tries(writer, source_id, [_release("a1", "A1")]) == ["waits"] * 4
    said = [record.getMessage() for record in caplog.records]
    assert len([m for m in said if m.startswith("The database writer process died starting")]) == 4, said
    assert not [m for m in said if "one at a time" in m or "died writing" in m], said
    assert _stored(tmp_path) == []


def test_a_writer_killed_by_a_real_time_signal_is_replaced(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    writer, source_id = _writer(_settings(tmp_path))

    async def run() -> list[str]:
        writer.start()
        await writer.write(source_id, [_release("a1", "A1")])
        [child] = _spawned_children()
        os.kill(child, signal.SIGRTMIN + 1)  # no name in signal.Signals
        while child in _spawned_children():
            time.sleep(0.05)
        outcomes = []
        for sku in ("a2", "a2", "a3"):
            try:
                await writer.write(source_id, [_release(sku, sku.upper())])
                outcomes.append("written")
            except BrokenExecutor:
                outcomes.append("waits")
        await writer.close()
        return outcomes

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        assert asyncio.run(run()) == ["waits", "written", "written"]
    assert f"killed by signal {int(signal.SIGRTMIN) + 1}" in caplog.text
    assert _stored(tmp_path) == [("a1", "A1"), ("a2", "A2"), ("a3", "A3")]


def test_a_fatal_older_duplicate_gives_way_to_the_newer_item_of_the_same_id(tmp_path: Path) -> None:
    writer, source_id = _writer(_settings(tmp_path))
    batch = [_release("x1", "OLD", Fatal("9.99"), path="x1-old"), _release("x1", "NEW", path="x1-new"),
             _release("y1", "Y1")]
    assert _tries(writer, source_id, batch, times=2) == ["waits", "written"]
    assert _stored(tmp_path) == [("x1", "NEW"), ("y1", "Y1")] and _rejected(tmp_path) == []


def test_a_batch_of_only_fatal_items_has_them_rejected_not_retried_forever(tmp_path: Path) -> None:
    """Both items of the batch kill the writer, each alone too; the writer survives a test write:
    the items' doing, so both are rejected (before: the batch was retried whole for as long as the crawl ran)."""
    writer, source_id = _writer(_settings(tmp_path))
    batch = [_release("k1", "K1", Fatal("9.99")), _release("k2", "K2", Fatal("1.00"))]
    assert _tries(writer, source_id, batch, times=2) == ["waits", "written"]
    assert _stored(tmp_path) == [] and sorted(_rejected(tmp_path)) == [f"{source_id}:k1", f"{source_id}:k2"]


def test_a_writer_that_dies_whatever_it_writes_rejects_no_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    writer, source_id = _writer(_settings(tmp_path))
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(DIES_AT_EVERY_WRITE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")]))
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        assert _tries(writer, source_id, [_release("s1", "S1")], times=3) == ["waits"] * 3  # alone in its batch
        assert _tries(writer, source_id, [_release("g1", "G1"), _release("g2", "G2")], times=3) == ["waits"] * 3
    assert "dies whatever it writes (exit code 75)" in caplog.text
    assert "died starting" not in caplog.text
    assert _rejected(tmp_path) == [] and _stored(tmp_path) == []


def test_a_writer_that_crashes_says_so_with_its_exit_code_and_traceback(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    from recordhound.catalog import worker

    writer, source_id = _writer(_settings(tmp_path))

    async def run() -> list[str]:
        writer.start()
        outcomes = []
        for argument in (Unreadable(), None):
            try:
                await writer.call(worker.ready, *(() if argument is None else (argument,)))
                outcomes.append("done")
            except BrokenExecutor:
                outcomes.append("died")
        await writer.close()
        return outcomes

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        assert asyncio.run(run()) == ["died", "done"]  # replaced
    assert "died writing (exit code 1)" in caplog.text
    assert "ValueError: this value cannot be read here" in capfd.readouterr().err


def test_a_writer_that_stops_answering_is_said_while_it_lasts_and_then_no_more(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database that stops answering on an open connection raises nothing for a long while: the
    writer only waits, and before, so did the crawl, saying nothing. Here the writer is frozen (SIGSTOP)
    during a batch: the wait is said after SLOW_CALL_SECONDS and again every STILL_SLOW_SECONDS, and
    not after the batch is written; a quick batch says nothing."""
    writer, source_id = _writer(_settings(tmp_path))

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("The store's writer has been")]

    async def run() -> tuple[int, int, int]:
        writer.start()
        await writer.write(source_id, [_release("a1", "A1")])  # the writer started (its start is slow)
        monkeypatch.setattr("recordhound.pipelines.writer_process.SLOW_CALL_SECONDS", 1.0)
        monkeypatch.setattr("recordhound.pipelines.writer_process.STILL_SLOW_SECONDS", 1.0)
        await writer.write(source_id, [_release("a0", "A0")])
        quick = len(said())
        [child] = _spawned_children()
        os.kill(child, signal.SIGSTOP)
        try:
            writing = asyncio.ensure_future(writer.write(source_id, [_release("a2", "A2"), _release("a3", "A3")]))
            await asyncio.sleep(3.5)
            frozen = len(said())
        finally:
            os.kill(child, signal.SIGCONT)
        await writing
        told = len(said())
        await asyncio.sleep(2.5)
        assert len(said()) == told, said()
        await writer.close()
        return quick, frozen, told

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        quick, frozen, told = asyncio.run(run())
    assert quick == 0 and frozen in (2, 3) and told - frozen <= 1, said()  # at 1, 2, 3 s while frozen
    assert all(m.startswith("The store's writer has been writing a batch of 2 items for ") for m in said()), said()
    assert _stored(tmp_path) == [("a0", "A0"), ("a1", "A1"), ("a2", "A2"), ("a3", "A3")]
