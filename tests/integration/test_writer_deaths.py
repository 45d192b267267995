"""A store writer process that dies while starting (here: its review queue file cannot be opened)
is not killed by the batch it was given: the batch waits whole, as in an outage (the batcher
retries it with backoff), and is never written one item at a time, so no item is rejected for a
death that was not its doing. Real spawned writer processes."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import BrokenExecutor
from decimal import Decimal
from pathlib import Path

import pytest
from scrapy.settings import Settings

from recordhound.config import ReviewConfig, StoreConfig
from recordhound.items import Release
from recordhound.pipelines.writer_process import WriterProcess


def test_a_writer_that_dies_starting_never_rejects_the_batch_s_items(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings()
    settings.setmodule("recordhound.settings")
    settings.set("RECORDHOUND_DATABASE_URL", f"sqlite:///{tmp_path / 'product.sqlite3'}")
    settings.set("RECORDHOUND_REVIEW_PATH", str(tmp_path))  # a directory: the queue file cannot be opened
    writer = WriterProcess(StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings), trusted=True)
    item = Release(source="demo", url="http://127.0.0.1/release/a1", external_id="a1", title="A1",
                   artists=["Someone"], price=Decimal("9.99"), currency="EUR")

    async def four_tries() -> list[str]:
        writer.start()
        outcomes = []
        for _ in range(4):  # the batcher's retries of one batch
            try:
                await writer.write(1, [item])
                outcomes.append("written")
            except BrokenExecutor:
                outcomes.append("waits")
        await writer.close()
        return outcomes

    with caplog.at_level(logging.ERROR, logger="recordhound.pipelines.writer_process"):
        assert asyncio.run(four_tries()) == ["waits"] * 4
    said = [record.getMessage() for record in caplog.records]
    assert len([m for m in said if m.startswith("The database writer process died starting")]) == 4, said
    assert not [m for m in said if "one at a time" in m or "died writing" in m], said
