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

ROOT = Path(__file__).resolve().parents[1]  # the checkout under test

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
    """A database of its own for one test, dropped afterwards; with ``own_role`` it also
    gets a login role of its own (so a test can lock that role out: "the database is down")."""

    def __init__(self, own_role: bool = False) -> None:
        self.name = f"rh_test_{uuid.uuid4().hex[:12]}"
        self.role = self.name if own_role else None
        url = make_url(PG_ADMIN_URL).set(database=self.name)
        if self.role:
            url = url.set(username=self.role, password=None)
        self.url = url.render_as_string(hide_password=False)

    def admin(self, *statements: str) -> None:
        engine = _admin()
        with engine.connect() as conn:
            for statement in statements:
                conn.execute(text(statement))
        engine.dispose()

    def __enter__(self) -> PostgresDatabase:
        if self.role:
            self.admin(f'CREATE ROLE "{self.role}" LOGIN', f'CREATE DATABASE "{self.name}" OWNER "{self.role}"')
        else:
            self.admin(f'CREATE DATABASE "{self.name}"')
        return self

    def lock_out(self) -> None:
        """The database goes away for this test's role: no new logins, open sessions killed."""
        self.admin(f'ALTER ROLE "{self.role}" NOLOGIN',
                   f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{self.role}'")

    def let_in(self) -> None:
        self.admin(f'ALTER ROLE "{self.role}" LOGIN')

    def __exit__(self, *exc: object) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        if self.role:
            self.admin(f'DROP ROLE IF EXISTS "{self.role}"')


@dataclass
class CrawlResult:
    returncode: int
    stdout: str
    stderr: str
    stats: dict[str, Any]
    summary: dict[str, Any]
    cpu_seconds: float  # user + system time of the crawl process


TRUSTED = ("-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true")


def crawl_env(**values: str) -> dict[str, str]:
    """The environment of a crawl subprocess: this checkout's recordhound first on its path (the
    venv's editable install may point at another checkout, e.g. from a git worktree), the
    project's settings, and ``values``."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "SCRAPY_SETTINGS_MODULE": "recordhound.settings", **values}


def run_crawl(workdir: Path, database_url: str, *args: str, timeout: float = 300, trusted: bool = True) -> CrawlResult:
    """`scrapy crawl catalog ARGS` as a real subprocess with its own folder and database.

    ``trusted``: the crawl creates the entities it finds (a first import), for tests of
    storing and crawling; the review tests pass False."""
    stats_file = workdir / f"stats-{uuid.uuid4().hex[:8]}.json"
    env = crawl_env(DATABASE_URL=database_url)
    command = [sys.executable, "-m", "scrapy", "crawl", "catalog", *args, *(TRUSTED if trusted else ()),
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
