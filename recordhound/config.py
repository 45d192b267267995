"""Settings parsed once into frozen dataclasses and validated at start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recordhound.exceptions import ConfigError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def _positive(settings: BaseSettings, name: str, kind: type[int] | type[float]) -> int | float:
    what = "a whole number" if kind is int else "a number of seconds"
    try:
        value = settings.getint(name) if kind is int else settings.getfloat(name)
    except ValueError as exc:
        raise ConfigError(f"{name} must be {what}, got {settings.get(name)!r}") from exc
    if value <= 0:
        raise ConfigError(f"{name} must be {what} above 0, got {value}")
    return value


def _positive_int(settings: BaseSettings, name: str) -> int:
    return int(_positive(settings, name, int))


def _positive_float(settings: BaseSettings, name: str) -> float:
    return float(_positive(settings, name, float))


def _bool(settings: BaseSettings, name: str) -> bool:
    try:
        return settings.getbool(name)
    except ValueError as exc:
        raise ConfigError(
            f"{name} must be true/false (or 1/0), got {settings.get(name)!r}"
        ) from exc


def _choice(settings: BaseSettings, name: str, choices: tuple[str, ...]) -> str:
    value = str(settings.get(name))
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def database_url(settings: BaseSettings | None = None) -> str:
    """The product database: the setting, then $DATABASE_URL, then the SQLite file."""
    configured = settings.get("RECORDHOUND_DATABASE_URL") if settings else ""
    if configured:
        return str(configured)
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    path = settings.get("RECORDHOUND_SQLITE_PATH") if settings else "recordhound.sqlite3"
    return f"sqlite:///{os.path.abspath(path or 'recordhound.sqlite3')}"


@dataclass(frozen=True)
class StoreConfig:
    database_url: str
    auto_upgrade: bool
    batch_size: int
    flush_seconds: float
    last_seen_resolution_seconds: int
    errors_kept: int
    writer: str  # "process" or "thread"

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> StoreConfig:
        url = database_url(settings)
        if "://" not in url:
            raise ConfigError(
                f"RECORDHOUND_DATABASE_URL / DATABASE_URL must be an SQLAlchemy URL such as "
                f"sqlite:///path.db or postgresql+psycopg://user@host/db, got {url!r}"
            )
        return cls(
            database_url=url,
            auto_upgrade=_bool(settings, "RECORDHOUND_DB_AUTO_UPGRADE"),
            batch_size=_positive_int(settings, "RECORDHOUND_STORE_BATCH_SIZE"),
            flush_seconds=_positive_float(settings, "RECORDHOUND_STORE_FLUSH_SECONDS"),
            last_seen_resolution_seconds=_positive_int(
                settings, "RECORDHOUND_LAST_SEEN_RESOLUTION_SECONDS"
            ),
            errors_kept=_positive_int(settings, "RECORDHOUND_SOURCE_ERRORS_KEPT"),
            writer=_choice(settings, "RECORDHOUND_STORE_WRITER", ("process", "thread")),
        )


@dataclass(frozen=True)
class ReportConfig:
    print_summary: bool
    stats_file: str

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ReportConfig:
        return cls(
            print_summary=_bool(settings, "RECORDHOUND_SUMMARY_ENABLED"),
            stats_file=str(settings.get("RECORDHOUND_STATS_FILE") or ""),
        )
