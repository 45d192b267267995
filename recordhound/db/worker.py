"""The product-database writer as it runs in its own process (see ``pipelines/store.py``).

Writing in a child process keeps SQLAlchemy's and the driver's Python work off the crawler's
GIL: in a thread it slowed Scrapy's own parsing measurably (``bench/crawl_store.py``).
"""

from __future__ import annotations

from datetime import timedelta

from recordhound.db.engine import make_engine
from recordhound.db.store import BatchResult, CatalogWriter
from recordhound.items import Release

_writer: CatalogWriter | None = None


def init(database_url: str, last_seen_resolution_seconds: int) -> None:
    """Executor initializer: one engine per writer process."""
    global _writer
    _writer = CatalogWriter(make_engine(database_url), timedelta(seconds=last_seen_resolution_seconds))


def write(source_id: int, items: list[Release]) -> BatchResult:
    assert _writer is not None, "worker.init() was not called in this process"
    return _writer.write(source_id, items)
