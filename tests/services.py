"""Real services for the tests: a private PostgreSQL database per test, crawls as subprocesses."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

PG_ADMIN_URL = os.environ.get(
    "RECORDHOUND_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
PG_START = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


def _admin() -> Engine:
    engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        engine.dispose()
        pytest.fail(f"PostgreSQL is not reachable at {PG_ADMIN_URL} ({exc}); start it: {PG_START}")
    return engine


class PostgresDatabase:
    """A database of its own for one test, dropped afterwards."""

    def __init__(self) -> None:
        self.name = f"rh_test_{uuid.uuid4().hex[:12]}"
        self.url = make_url(PG_ADMIN_URL).set(database=self.name).render_as_string(hide_password=False)

    def __enter__(self) -> PostgresDatabase:
        admin = _admin()
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self.name}"'))
        admin.dispose()
        return self

    def __exit__(self, *exc: object) -> None:
        admin = _admin()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))
        admin.dispose()


@dataclass
class CrawlResult:
    returncode: int
    stdout: str
    stderr: str
    stats: dict[str, Any]
    summary: dict[str, Any]
    cpu_seconds: float  # user + system time of the crawl process


def run_crawl(workdir: Path, database_url: str, *args: str, timeout: float = 300) -> CrawlResult:
    """`scrapy crawl catalog ARGS` as a real subprocess with its own folder and database."""
    stats_file = workdir / f"stats-{uuid.uuid4().hex[:8]}.json"
    env = {**os.environ, "DATABASE_URL": database_url, "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}
    command = [sys.executable, "-m", "scrapy", "crawl", "catalog", *args,
               "-s", f"RECORDHOUND_STATS_FILE={stats_file}", "-s", "LOG_LEVEL=INFO"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(stats_file.read_text()) if stats_file.exists() else {"stats": {}, "summary": {}}
    return CrawlResult(done.returncode, done.stdout, done.stderr, report["stats"], report["summary"], cpu)


REDIS_URL = os.environ.get("RECORDHOUND_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
REDIS_START = 'redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no'


def redis_url() -> str:
    """The shared Redis the tests use (each test under its own key prefix)."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        pytest.fail(f"Redis is not reachable at {REDIS_URL} ({exc}); start it: {REDIS_START}")
    return REDIS_URL


def unique_prefix() -> str:
    return f"rhtest-{uuid.uuid4().hex[:10]}"
