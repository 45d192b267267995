"""The product-database writer as it runs in its own process (see ``pipelines/store.py``).

Writing in a child process keeps SQLAlchemy's and the driver's Python work off the crawler's
GIL: in a thread it slowed Scrapy's own parsing measurably (``bench/crawl_store.py``).
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from typing import TYPE_CHECKING

from recordhound import failpoints
from recordhound.catalog.result import BatchResult
from recordhound.config import ReviewConfig, StoreConfig

if TYPE_CHECKING:
    from recordhound.catalog.writer import CatalogWriter
    from recordhound.items import Release

PARENT_CHECK_SECONDS = 0.5
_writer: CatalogWriter | None = None
_delay_per_item = 0.0  # RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS: a deliberately slow store


def init(store: StoreConfig, review: ReviewConfig, trusted: bool, parent_pid: int | None = None) -> None:
    """Executor initializer: one engine per writer; a writer process exits with its crawler."""
    from recordhound.catalog.writer import open_writer  # in the writer's process only (not the crawler's)
    from recordhound.db.engine import make_engine

    global _writer, _delay_per_item
    if parent_pid is not None:  # a child process: first the watch, so that no wait below outlives the crawler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the crawler's to act on
        failpoints.kill_with(parent_pid)  # a crash point here takes the whole node down
        threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True,
                         name="recordhound-parent-watch").start()
    _writer = open_writer(make_engine(store.database_url), store, review, trusted)
    _delay_per_item = store.delay_per_item_seconds


def _exit_with_parent(parent_pid: int) -> None:
    """A crawler killed with SIGKILL cannot stop its writer: the writer notices and exits."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)  # its batch was not acked; the crawl re-fetches those pages


def ready() -> None:
    """Nothing: submitted to start the writer (``init``) before the first batch."""


def write(source_id: int, items: list[Release] | bytes) -> BatchResult | None:
    """Write a batch: the items, or (from a writer process's crawler) the pickled list of them.
    None: this process cannot read the batch (a value of a type only the crawler's ``__main__`` has);
    the crawler then sends its items one by one (``write_each``)."""
    assert _writer is not None, "worker.init() was not called in this process"
    if isinstance(items, bytes):
        try:
            items = pickle.loads(items)  # noqa: S301 - our own crawler's batch
        except BaseException:  # noqa: BLE001 - whatever unpickling raises (a value's reducer, even SystemExit)
            return None
    assert isinstance(items, list)
    if _delay_per_item:
        time.sleep(_delay_per_item * len(items))
    return _writer.write(source_id, items)


def write_each(source_id: int, pickled: list[tuple[bytes, bytes | str]]) -> BatchResult:
    """A batch this process could not read whole, item by item: (the item's identity as a plain
    ``Release``, the pickled item or why it could not be pickled). The items it cannot read are
    rejected with the reason (the review queue lists them, as every rejected item), the rest written."""
    assert _writer is not None, "worker.init() was not called in this process"
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
    _writer.reject(source_id, unreadable, result)
    return result


def reject(source_id: int, rejected: list[tuple[bytes, str]]) -> BatchResult:
    """Items the crawler gives up on, rejected with the reason: (the item's identity as a plain
    ``Release``, pickled; why). The review queue lists them, as every rejected item."""
    assert _writer is not None, "worker.init() was not called in this process"
    result = BatchResult(items=len(rejected))
    _writer.reject(source_id, [(pickle.loads(identity), reason) for identity, reason in rejected], result)  # noqa: S301
    return result


def probe(source_id: int) -> None:
    """A test write of the product DB, rolled back: under the write lock, one row inserted (into a
    table without a sequence, so no id is used up) and one updated. Does this writer survive writing
    at all? If so, an item that killed it alone is that item's doing."""
    from sqlalchemy import text

    from recordhound.db.engine import lock_for_writing

    assert _writer is not None, "worker.init() was not called in this process"
    with _writer.engine.connect() as conn, conn.begin() as transaction:
        lock_for_writing(conn)
        conn.execute(text("INSERT INTO source_spellings (source_id, kind, spelling, entity_id) "
                          "VALUES (:source_id, 'probe', 'recordhound write probe', 0)"), {"source_id": source_id})
        conn.execute(text("UPDATE sources SET metadata = metadata WHERE id = :source_id"), {"source_id": source_id})
        transaction.rollback()
