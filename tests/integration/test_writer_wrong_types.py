"""A bad item costs only itself, also when its values are of the wrong type (a launcher's own
pipeline put a float price, a UUID barcode, a Fraction country on it): that item is rejected with
the reason and listed with the review queue's rejected items, the rest of its batch is written.
The real catalog writer on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import uuid
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from recordhound.catalog.writer import open_writer
from recordhound.config import ReviewConfig, StoreConfig
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.db.sources import ensure_source
from recordhound.items import Offer, Release
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue
from tests.integration.dbcheck import ProductDb
from tests.integration.truthcheck import assert_ids_consecutive


def _release(n: int, **values: Any) -> Release:
    url = f"http://shop/release/{n}"
    item = Release("demo", url, f"DR-{n}", f"Title {n}", [f"Artist {n}"], "Fold Records", f"FLD-{n:03d}", 2001,
                   ["House"], offers=[Offer(f"DR-{n}", url, "LP", "new", price=Decimal("9.99"), currency="EUR")])
    for name, value in values.items():
        setattr(item, name, value)
    return item


def _circular() -> list[Any]:
    styles: list[Any] = ["House"]
    styles.append(styles)
    return styles


# the last three no JSON document holds: the rejected item is listed by its identity
@pytest.mark.parametrize("wrong", [{"price": 9.99}, {"barcode": uuid.UUID(int=7)}, {"country": Fraction(1, 3)},
                                   {"year": "2001"}, {"year": {(1, 2): 2001}}, {"styles": _circular()},
                                   {"year": threading.Lock()}], ids=["float", "uuid", "fraction", "str", "tuple-keys",
                                                                     "cycle", "lock"])
def test_an_item_with_a_value_of_the_wrong_type_is_rejected_and_the_rest_written(
        database_url: str, tmp_path: Path, wrong: dict[str, Any]) -> None:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    settings.setdict({"RECORDHOUND_DATABASE_URL": database_url, "RECORDHOUND_REVIEW_PATH": str(tmp_path / "review.sqlite3")})
    engine = make_engine(database_url)
    upgrade(engine)
    source_id = ensure_source(engine, "demo", "html", "http://shop/")
    writer = open_writer(engine, StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings), trusted=True)
    try:
        result = writer.write(source_id, [_release(1), _release(2, **wrong), _release(3), _release(4)])
    finally:
        writer.queue.close()
        engine.dispose()
    assert result.items == 4 and result.counts["stored"] == 3 and result.counts["invalid"] == 1, result
    assert [where for where, _ in result.rejections] == ["http://shop/release/2"]
    db = ProductDb(database_url)
    try:
        assert sorted(sku for (sku,) in db.rows("SELECT external_id FROM offers")) == ["DR-1", "DR-3", "DR-4"]
        assert_ids_consecutive(db)
    finally:
        db.close()
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    try:
        assert [r["key"] for r in queue.rejected()] == [f"{source_id}:DR-2"]
    finally:
        queue.close()
