"""The demo's progress line and the start-up line that names the crawl's backends."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

import recordhound.settings
from recordhound.config import FrontierConfig, ReviewConfig, StoreConfig
from recordhound.extensions.backends import describe_frontier, describe_review, describe_store
from recordhound.extensions.progress import progress_line


def _settings(**overrides: object) -> Settings:
    settings = Settings()
    settings.setmodule(recordhound.settings)
    settings.setdict(overrides, priority="cmdline")
    return settings


def test_progress_line_on_a_terminal_is_a_bar_and_elsewhere_a_plain_line() -> None:
    assert progress_line(50, 100, 40, 2.0, tty=True) == "[############............] 50 pages  25 pages/s  40 items"
    assert progress_line(50, 100, 40, 2.0, tty=False) == "progress: 50 pages  25 pages/s  40 items"
    assert progress_line(0, 0, 0, 0.0, tty=True).startswith("[....")


def test_backends_are_named_with_passwords_masked() -> None:
    settings = _settings(RECORDHOUND_REDIS_URL="redis://:secret@cache:6379/0",
                         RECORDHOUND_DATABASE_URL="postgresql+psycopg://rh:secret@db/catalog")
    frontier, review = FrontierConfig.from_settings(settings), ReviewConfig.from_settings(settings)
    store = StoreConfig.from_settings(settings)
    described = " ".join([describe_frontier(frontier, "demo"), describe_store(store), describe_review(review)])
    assert "secret" not in described
    assert describe_frontier(frontier, "demo") == "redis (redis://***@cache:6379/0, prefix recordhound)"
    assert describe_store(store).startswith("postgresql (postgresql+psycopg://rh:***@db/catalog")


def test_embedded_backends_name_their_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    settings = _settings(RECORDHOUND_REDIS_URL="", RECORDHOUND_DATABASE_URL="sqlite:///rh.sqlite3")
    assert describe_frontier(FrontierConfig.from_settings(settings), "demo") == \
        "embedded (.recordhound/frontier/demo.sqlite3)"
    assert describe_store(StoreConfig.from_settings(settings)) == "sqlite (rh.sqlite3)"
