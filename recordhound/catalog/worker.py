"""The product-database writer as it runs in its own process (see ``pipelines/store.py``).

Writing in a child process keeps SQLAlchemy's and the driver's Python work off the crawler's
GIL: in a thread it slowed Scrapy's own parsing measurably (``bench/crawl_store.py``). The writer
does all of a crawl's product-database work: it opens the source (the schema brought to the head,
the source's row, its status), writes the batches and the 304s, and records the crawl's progress
and end, so the crawler never loads SQLAlchemy (about 0.35 s of a node's start). Its review queue
is opened at the first batch, not at start: a review file another process holds locked delays the
writing, never the crawl's status.
"""

from __future__ import annotations

import os
from multiprocessing import util
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from recordhound import failpoints
from recordhound.catalog.result import BatchResult
from recordhound.config import ReviewConfig, StoreConfig

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from recordhound.catalog.writer import CatalogWriter
    from recordhound.items import Release

PARENT_CHECK_SECONDS = 0.5
_engine: Engine | None = None
_configs: tuple[StoreConfig, ReviewConfig, bool, Callable[..., CatalogWriter]] | None = None
_writer: CatalogWriter | None = None  # opened at the first batch (it opens the review queue)
_delay_per_item = 0.0  # RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS: a deliberately slow store


def init(store: StoreConfig, review: ReviewConfig, trusted: bool, parent_pid: int | None = None) -> None:
    """Executor initializer: one engine per writer; a writer process exits with its crawler. The
    signals are set before the imports (~0.3 s): a SIGTERM to the whole group can still end a writer
    in its first few hundredths of a second, and it is then replaced."""
    global _engine, _configs, _writer, _delay_per_item
    if parent_pid is not None:  # a child process: first the watch, so that no wait below outlives the crawler
        for stop in (signal.SIGINT, signal.SIGTERM):  # a terminal's Ctrl-C, or a service manager's SIGTERM to the
            signal.signal(stop, signal.SIG_IGN)     # whole group: stopping is the crawler's to do (it closes this)
        failpoints.kill_with(parent_pid)  # a crash point here takes the whole node down
        threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True,
                         name="recordhound-parent-watch").start()
        util.Finalize(None, _leave, exitpriority=-1)  # the last of the process's exit steps
    from recordhound.catalog.writer import open_writer  # imported while the crawl starts, not at the first batch
    from recordhound.db.engine import make_engine

    _engine, _configs, _writer = make_engine(store.database_url), (store, review, trusted, open_writer), None
    _delay_per_item = store.delay_per_item_seconds


def _database() -> Engine:
    assert _engine is not None, "worker.init() was not called in this process"
    return _engine


def _catalog() -> CatalogWriter:
    """The catalog writer, opened at the first batch."""
    global _writer
    if _writer is None:
        assert _configs is not None, "worker.init() was not called in this process"
        store, review, trusted, open_writer = _configs
        _writer = open_writer(_database(), store, review, trusted)
    return _writer


def _leave() -> None:
    """A writer process told to stop (every batch done) closes its connections and ends at once: the
    interpreter's teardown of SQLAlchemy's and the writer's modules took ~0.1 s of every crawl's end.
    A process ending on an error goes the usual way instead (its traceback printed, exit code 1)."""
    if sys.exc_info()[0] is not None:
        return
    try:
        if _writer is not None:
            _writer.queue.close()
        if _engine is not None:
            _engine.dispose()
    except BaseException:  # noqa: BLE001 - said, and the process ends all the same
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _exit_with_parent(parent_pid: int) -> None:
    """A crawler killed with SIGKILL cannot stop its writer: the writer notices and exits."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)  # its batch was not acked; the crawl re-fetches those pages


def ready() -> None:
    """Nothing: submitted to start the writer (``init``) before the first batch."""


def open_source(name: str, kind: str, location: str, auto_upgrade: bool, started_at: str, call: str = "") -> int:
    """A crawl begins: the schema brought to the head (``RECORDHOUND_DB_AUTO_UPGRADE``), the id
    sequences at their tables' ``max(id)`` (``db/ids.py``), the source's row (created on its first
    crawl), its status in progress, and a first crawl sample, all in one transaction. Tried again
    after a commit whose reply was lost, it records nothing twice (``call``: the call's own id, see
    ``_record_once``). Its id."""
    from recordhound.db.engine import writing
    from recordhound.db.ids import align_sequences
    from recordhound.db.migrate import upgrade
    from recordhound.db.sources import ensure_source

    failpoints.hit("store.opening_source")
    engine = _database()
    if auto_upgrade:
        upgrade(engine)
    with writing(engine) as conn:
        align_sequences(conn)  # a rollback after a ``setval`` (a kill, an outage) left one ahead
        source_id = ensure_source(conn, name, kind, location)
        _record_once(conn, source_id, call, {"status": "in_progress", "started_at": started_at,
                                             "error_message": None}, {})
    failpoints.hit("store.source_opened")
    return source_id


def touch(source_id: int, urls: list[str], resolution_seconds: float) -> None:
    """Pages that answered 304: their offers' ``last_seen`` (``db/offers.py``)."""
    from recordhound.db.offers import touch_offers

    with _database().begin() as conn:
        touch_offers(conn, source_id, urls, datetime.now(UTC), timedelta(seconds=resolution_seconds))


def record_progress(source_id: int, changes: dict[str, Any], progress: dict[str, Any], finished: bool = False,
                    health_error: str | None = None, call: str = "") -> None:
    """The crawl's progress (``finished``: its end) into the source's metadata and a crawl sample. At
    the end, a crawl that failed no health check but met problems says which (``errors``). Tried again
    after a commit whose reply was lost, it records nothing twice (``call``: see ``_record_once``)."""
    from recordhound.db.engine import writing
    from recordhound.db.samples import readable_errors

    if finished and not changes.get("error_message") and changes.get("errors"):
        changes = {**changes, "error_message": readable_errors(changes["errors"])}
    with writing(_database()) as conn:  # both or neither: a crawl's end is its status and its last sample
        _record_once(conn, source_id, call, changes, progress, finished, health_error)
    if finished:
        failpoints.hit("store.end_recorded")


def _record_once(conn: Connection, source_id: int, call: str, changes: dict[str, Any], progress: dict[str, Any],
                 finished: bool = False, health_error: str | None = None) -> None:
    """``changes`` into the source's metadata and a crawl sample of ``progress``, once per ``call``
    (``db/sources.py update_source_meta``; no id: a call that is not tried again, always written)."""
    from recordhound.db.samples import record_sample
    from recordhound.db.sources import update_source_meta

    if update_source_meta(conn, source_id, changes, call) is not None:
        record_sample(conn, source_id, progress, finished, health_error)


def write(source_id: int, items: list[Release] | bytes) -> BatchResult | None:
    """Write a batch: the items, or (from a writer process's crawler) the pickled list of them.
    None: this process cannot read the batch (a value of a type only the crawler's ``__main__`` has);
    the crawler then sends its items one by one (``write_each``)."""
    writer = _catalog()
    if isinstance(items, bytes):
        try:
            items = pickle.loads(items)  # noqa: S301 - our own crawler's batch
        except BaseException:  # noqa: BLE001 - whatever unpickling raises (a value's reducer, even SystemExit)
            return None
    assert isinstance(items, list)
    if _delay_per_item:
        time.sleep(_delay_per_item * len(items))
    return writer.write(source_id, items)


def write_each(source_id: int, pickled: list[tuple[bytes, bytes | str]]) -> BatchResult:
    """A batch this process could not read whole, item by item: (the item's identity as a plain
    ``Release``, the pickled item or why it could not be pickled). The items it cannot read are
    rejected with the reason (the review queue lists them, as every rejected item), the rest written."""
    items: list[Release] = []
    unreadable: list[tuple[Release, str]] = []
    for identity, item in pickled:
        try:
            if isinstance(item, str):
                raise pickle.PicklingError(item)
            items.append(pickle.loads(item))  # noqa: S301 - our own crawler's item
        except BaseException as exc:  # noqa: BLE001 - whatever unpickling raises: this item's fault
            unreadable.append((pickle.loads(identity), (  # noqa: S301 - plain strings, made by our crawler
                f"the store's writer process cannot read it ({type(exc).__name__}: {str(exc)[:200]}); an item's "
                "values must be of types the writer can import, not ones defined in the script that started "
                "the crawl")))
    result = write(source_id, items) if items else BatchResult()
    assert result is not None
    failpoints.hit("store.before_unreadable_rejected")
    result.items += len(unreadable)
    _catalog().reject(source_id, unreadable, result)
    return result


def reject(source_id: int, rejected: list[tuple[bytes, str]]) -> BatchResult:
    """Items the crawler gives up on, rejected with the reason: (the item's identity as a plain
    ``Release``, pickled; why). The review queue lists them, as every rejected item."""
    result = BatchResult(items=len(rejected))
    _catalog().reject(source_id, [(pickle.loads(identity), reason) for identity, reason in rejected], result)  # noqa: S301
    return result


def probe(source_id: int) -> None:
    """A test write of the product DB, rolled back: under the write lock, one row inserted (into a
    table without a sequence, so no id is used up) and one updated. Does this writer survive writing
    at all? If so, an item that killed it alone is that item's doing."""
    from sqlalchemy import text

    from recordhound.db.engine import lock_for_writing

    with _database().connect() as conn, conn.begin() as transaction:
        lock_for_writing(conn)
        conn.execute(text("INSERT INTO source_spellings (source_id, kind, spelling, entity_id) "
                          "VALUES (:source_id, 'probe', 'recordhound write probe', 0)"), {"source_id": source_id})
        conn.execute(text("UPDATE sources SET metadata = metadata WHERE id = :source_id"), {"source_id": source_id})
        transaction.rollback()
