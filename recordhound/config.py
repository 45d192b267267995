"""Settings parsed once into frozen dataclasses and validated at start-up."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recordhound.exceptions import ConfigError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def _number(settings: BaseSettings, name: str, kind: type[int] | type[float], zero_ok: bool,
            what: str = "a number") -> int | float:
    what = "a whole number" if kind is int else what
    try:
        value = settings.getint(name) if kind is int else settings.getfloat(name)
    except ValueError as exc:
        raise ConfigError(f"{name} must be {what}, got {settings.get(name)!r}") from exc
    if not math.isfinite(value):  # (nan passes every comparison below; inf waits forever)
        raise ConfigError(f"{name} must be {what}, got {settings.get(name)!r}")
    if value < 0 or (value == 0 and not zero_ok):
        raise ConfigError(f"{name} must be {what} {'of 0 or more' if zero_ok else 'above 0'}, got {value}")
    return value


def positive_int(settings: BaseSettings, name: str) -> int:
    return int(_number(settings, name, int, zero_ok=False))


def positive_float(settings: BaseSettings, name: str) -> float:
    return float(_number(settings, name, float, zero_ok=False, what="a number of seconds"))


def non_negative_int(settings: BaseSettings, name: str) -> int:
    return int(_number(settings, name, int, zero_ok=True))


def non_negative_float(settings: BaseSettings, name: str) -> float:
    return float(_number(settings, name, float, zero_ok=True))


def _bool(settings: BaseSettings, name: str) -> bool:
    try:
        return settings.getbool(name)
    except ValueError as exc:
        raise ConfigError(
            f"{name} must be true/false (or 1/0), got {settings.get(name)!r}"
        ) from exc


def follow_enabled(settings: BaseSettings, argument: object = None) -> bool:
    """Whether the crawl follows its recrawl schedule: ``-a follow=...`` (a spider argument, when
    given) or RECORDHOUND_FOLLOW, parsed like any boolean setting."""
    if argument is not None:
        from scrapy.settings import BaseSettings as Given

        settings = Given({"RECORDHOUND_FOLLOW": argument})
    return _bool(settings, "RECORDHOUND_FOLLOW")


def _choice(settings: BaseSettings, name: str, choices: tuple[str, ...]) -> str:
    value = str(settings.get(name))
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def project_settings() -> BaseSettings:
    """Scrapy's project settings; recordhound's own when run outside a Scrapy project folder."""
    from scrapy.utils.conf import closest_scrapy_cfg
    from scrapy.utils.project import get_project_settings

    if not closest_scrapy_cfg() and "SCRAPY_SETTINGS_MODULE" not in os.environ:
        os.environ["SCRAPY_SETTINGS_MODULE"] = "recordhound.settings"
    return get_project_settings()


# The product databases recordhound stores to, and the drivers it installs (a URL's ``backend+driver``).
DATABASE_DRIVERS = {"sqlite": ("", "pysqlite"), "postgresql": ("", "psycopg")}


def database_url(settings: BaseSettings | None = None) -> str:
    """The product database: the setting, then $DATABASE_URL, then the SQLite file. ``postgres://`` (what
    many hosts give) reads as ``postgresql://``; a URL of another database or driver is a ``ConfigError``."""
    configured = settings.get("RECORDHOUND_DATABASE_URL") if settings else ""
    if configured or os.environ.get("DATABASE_URL"):
        return _product_url(str(configured or os.environ["DATABASE_URL"]))
    path = settings.get("RECORDHOUND_SQLITE_PATH") if settings else "recordhound.sqlite3"
    return f"sqlite:///{os.path.abspath(path or 'recordhound.sqlite3')}"


def _product_url(url: str) -> str:
    from recordhound.preflight import safe_url

    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ConfigError("RECORDHOUND_DATABASE_URL / DATABASE_URL must be an SQLAlchemy URL such as "
                          f"sqlite:///path.db or postgresql+psycopg://user@host/db, got {url!r}")
    backend, _, driver = scheme.lower().partition("+")
    backend = "postgresql" if backend == "postgres" else backend
    if driver not in DATABASE_DRIVERS.get(backend, ()):
        raise ConfigError(f"RECORDHOUND_DATABASE_URL / DATABASE_URL: recordhound stores to SQLite or PostgreSQL "
                          f"through psycopg (sqlite:///path.db, postgresql+psycopg://user@host/db), not {scheme}: "
                          f"got {safe_url(url)}")
    return f"{backend}{'+' if driver else ''}{driver}://{rest}"


@dataclass(frozen=True)
class StoreConfig:
    database_url: str
    auto_upgrade: bool
    batch_size: int
    flush_seconds: float
    last_seen_resolution_seconds: int
    errors_kept: int
    writer: str  # "process" or "thread"
    retry_max_seconds: float
    analyze_rows: int  # 0: never ANALYZE (autovacuum's job)
    max_waiting_items: int  # back-pressure: the crawl pauses while this many items await the store
    delay_per_item_seconds: float  # a deliberately slow writer (tests, benches)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> StoreConfig:
        return cls(
            database_url=database_url(settings),
            auto_upgrade=_bool(settings, "RECORDHOUND_DB_AUTO_UPGRADE"),
            batch_size=positive_int(settings, "RECORDHOUND_STORE_BATCH_SIZE"),
            flush_seconds=positive_float(settings, "RECORDHOUND_STORE_FLUSH_SECONDS"),
            last_seen_resolution_seconds=positive_int(
                settings, "RECORDHOUND_LAST_SEEN_RESOLUTION_SECONDS"
            ),
            errors_kept=positive_int(settings, "RECORDHOUND_SOURCE_ERRORS_KEPT"),
            writer=_choice(settings, "RECORDHOUND_STORE_WRITER", ("process", "thread")),
            retry_max_seconds=positive_float(settings, "RECORDHOUND_FRONTIER_RETRY_MAX_SECONDS"),
            analyze_rows=non_negative_int(settings, "RECORDHOUND_STORE_ANALYZE_ROWS"),
            max_waiting_items=positive_int(settings, "RECORDHOUND_STORE_MAX_WAITING_ITEMS"),
            delay_per_item_seconds=non_negative_float(settings, "RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS"),
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


@dataclass(frozen=True)
class FrontierConfig:
    redis_url: str  # empty: the embedded (SQLite) frontier
    redis_prefix: str
    path_template: str  # embedded file; "{crawl}" is replaced by the crawl id
    crawl_id: str  # empty: the source name
    node_id: str  # empty: "<host>-<n>", the lowest free slot on this host
    lease_seconds: float
    lease_batch: int
    flush_seconds: float
    push_batch: int
    max_attempts: int
    retry_max_seconds: float
    seen_cache: int
    call_timeout_seconds: float = 1.0
    progress_seconds: float = 60.0
    join_wait_seconds: float = 120.0

    @property
    def backend(self) -> str:
        return "redis" if self.redis_url else "embedded"

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FrontierConfig:
        jobdir = settings.get("JOBDIR")
        folder = str(settings.get("RECORDHOUND_FRONTIER_DIR") or ".recordhound/frontier")
        template = (os.path.join(jobdir, "frontier.sqlite3") if jobdir
                    else os.path.join(folder, "{crawl}.sqlite3"))
        return cls(
            redis_url=redis_url(settings),
            redis_prefix=str(settings.get("RECORDHOUND_REDIS_PREFIX") or "recordhound"),
            path_template=template,
            crawl_id=str(settings.get("RECORDHOUND_CRAWL_ID") or ""),
            node_id=str(settings.get("RECORDHOUND_NODE_ID") or ""),
            lease_seconds=positive_float(settings, "RECORDHOUND_FRONTIER_LEASE_SECONDS"),
            lease_batch=positive_int(settings, "RECORDHOUND_FRONTIER_LEASE_BATCH"),
            flush_seconds=positive_float(settings, "RECORDHOUND_FRONTIER_FLUSH_SECONDS"),
            push_batch=positive_int(settings, "RECORDHOUND_FRONTIER_PUSH_BATCH"),
            max_attempts=positive_int(settings, "RECORDHOUND_FRONTIER_MAX_ATTEMPTS"),
            retry_max_seconds=positive_float(settings, "RECORDHOUND_FRONTIER_RETRY_MAX_SECONDS"),
            seen_cache=positive_int(settings, "RECORDHOUND_FRONTIER_SEEN_CACHE"),
            call_timeout_seconds=positive_float(settings, "RECORDHOUND_FRONTIER_CALL_TIMEOUT_SECONDS"),
            progress_seconds=positive_float(settings, "RECORDHOUND_FOLLOW_PROGRESS_SECONDS"),
            join_wait_seconds=positive_float(settings, "RECORDHOUND_FRONTIER_JOIN_WAIT_SECONDS"),
        )


def redis_url(settings: BaseSettings) -> str:
    """The shared Redis: the setting, then $REDIS_URL; empty means embedded."""
    url = str(settings.get("RECORDHOUND_REDIS_URL") or os.environ.get("REDIS_URL") or "")
    from recordhound.redis_client import SCHEMES

    if url and not url.startswith(SCHEMES):
        raise ConfigError(f"REDIS_URL / RECORDHOUND_REDIS_URL must look like redis://host:6379/0 (one server) or "
                          f"redis+cluster://host:7000 (any node of a Redis Cluster), got {url!r}")
    return url


@dataclass(frozen=True)
class ReviewConfig:
    redis_url: str  # empty: the embedded queue file
    redis_prefix: str
    path: str
    trust_new_entities: bool
    price_threshold_pct: float
    ttl_seconds: float  # 0: off
    lease_seconds: float
    poll_seconds: float
    ack_delay_seconds: float
    batch_size: int  # decisions per queue transaction and per product-DB transaction

    @property
    def backend(self) -> str:
        return "redis" if self.redis_url else "embedded"

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ReviewConfig:
        return cls(
            redis_url=redis_url(settings),
            redis_prefix=str(settings.get("RECORDHOUND_REDIS_PREFIX") or "recordhound"),
            path=os.path.abspath(str(settings.get("RECORDHOUND_REVIEW_PATH") or ".recordhound/review.sqlite3")),
            trust_new_entities=_bool(settings, "RECORDHOUND_TRUST_NEW_ENTITIES"),
            price_threshold_pct=non_negative_float(settings, "RECORDHOUND_PRICE_REVIEW_THRESHOLD"),
            ttl_seconds=non_negative_float(settings, "RECORDHOUND_REVIEW_TTL_SECONDS"),
            lease_seconds=positive_float(settings, "RECORDHOUND_APPLY_LEASE_SECONDS"),
            poll_seconds=positive_float(settings, "RECORDHOUND_APPLY_POLL_SECONDS"),
            ack_delay_seconds=non_negative_float(settings, "RECORDHOUND_APPLY_ACK_DELAY_SECONDS"),
            batch_size=positive_int(settings, "RECORDHOUND_REVIEW_BATCH_SIZE"),
        )
