"""The apply worker meets a store that refuses it for good (no wait will cure it): it stops with one
``error:`` line that names the store and what to do, and the decisions it held go back to the
approved queue, none failed, none completed; once the store is fixed, a worker applies them all.

Before, these refusals were waited out as outages, forever (SQLite's read-only or un-migrated
product DB, a review-queue key of the wrong type), or failed every job (PostgreSQL's permission
denied). Root writes a chmod 0444 file all the same: a read-only SQLite database is opened with
``mode=ro`` here, which SQLite refuses exactly as it refuses a read-only file or mount."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import make_url, text

from recordhound.catalog.apply import ApplyWorker
from recordhound.catalog.errors import RefusalError
from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.review.docstore import RedisDocStore
from tests.integration.review_env import ReviewEnv, _open, review_env
from tests.integration.test_apply_outage import NAMES, _assert_applied, _decided
from tests.services import PostgresDatabase, redis_url, unique_prefix

WAIT_SECONDS = 20  # what the worker is given before the test calls it a hang (the old waiting, forever)


def _within(seconds: float) -> Callable[[], bool]:
    """A worker's ``stop``: true once ``seconds`` have passed (the worker that waits forever stops)."""
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() > deadline


def _worker_on(env: ReviewEnv, database_url: str) -> ApplyWorker:
    engine = make_engine(database_url)
    return ApplyWorker(engine, env.queue, CatalogWriter(engine, timedelta(hours=1), env.queue,
                                                        ReviewPolicy(False, 5.0)), env.config())


def _assert_kept(env: ReviewEnv) -> None:
    """Nothing failed or completed: the decisions wait in the approved queue."""
    assert env.queue.jobs("failed") == [] and env.queue.jobs("completed") == []
    assert len(env.queue.jobs("approved")) == len(NAMES) and env.queue.jobs("processing") == []


def test_a_read_only_product_database_stops_the_worker_with_one_line(tmp_path: Path) -> None:
    """A real ``recordhound apply``: exit 2 and one ``error:`` line; before, it waited, forever."""
    with review_env("embedded", tmp_path) as env:
        entry_ids = _decided(env)
        read_only = f"sqlite:///file:{tmp_path / 'product.sqlite3'}?mode=ro&uri=true"
        command = [sys.executable, "-m", "recordhound", "apply", "-s", "RECORDHOUND_APPLY_POLL_SECONDS=0.1"]
        for setting in env.settings():
            command += ["-s", setting]
        process_env = {**os.environ, "DATABASE_URL": read_only, "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}
        try:
            done = subprocess.run(command, cwd=tmp_path, env=process_env, capture_output=True, text=True,
                                  timeout=WAIT_SECONDS)
        except subprocess.TimeoutExpired as exc:  # the process is killed by now
            raise AssertionError(f"the worker still waits after {WAIT_SECONDS} s:\n{str(exc.stderr)[-2000:]}") from exc
        error = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 2, done.stderr[-3000:]
        assert error.startswith("error: the product database (sqlite:///") and "product.sqlite3" in error, error
        assert "attempt to write a readonly database" in error and "writable" in error, error
        _assert_kept(env)
        assert env.worker().run()["completed"] == len(NAMES)
        _assert_applied(env, entry_ids)


def test_a_product_database_without_the_schema_stops_the_worker(tmp_path: Path) -> None:
    with review_env("embedded", tmp_path) as env:
        entry_ids = _decided(env)
        worker = _worker_on(env, f"sqlite:///{tmp_path / 'never-migrated.sqlite3'}")
        try:
            with pytest.raises(RefusalError, match="no such table.*recordhound db upgrade"):
                worker.run(stop=_within(WAIT_SECONDS))
        finally:
            worker.engine.dispose()
        _assert_kept(env)
        assert env.worker().run()["completed"] == len(NAMES)
        _assert_applied(env, entry_ids)


@contextmanager
def _postgres_env(tmp_path: Path) -> Iterator[tuple[ReviewEnv, PostgresDatabase]]:
    """Redis queue + PostgreSQL product DB; the reader role (``_reader``), if made, is dropped after it."""
    database = PostgresDatabase()
    try:
        with database:
            env = _open("redis", database.url, redis_url(), unique_prefix(), str(tmp_path / "review.sqlite3"))
            try:
                yield env, database
            finally:
                env.queue.store.drop()
                env.queue.close()
                env.engine.dispose()
    finally:
        database.admin(f'DROP ROLE IF EXISTS "{database.name}_reader"')  # its grants went with the database


def _reader(env: ReviewEnv, database: PostgresDatabase) -> str:
    """A role of the test's own that may read the product tables, not write them: its URL."""
    role = f"{database.name}_reader"
    database.admin(f'CREATE ROLE "{role}" LOGIN')
    with env.engine.begin() as conn:
        conn.execute(text(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{role}"'))
        conn.execute(text(f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO "{role}"'))
    return make_url(database.url).set(username=role, password=None).render_as_string(hide_password=False)


@pytest.mark.parametrize("batch", [1, 3])  # one decision per write; the three in one write
def test_a_role_without_write_permission_stops_the_worker(tmp_path: Path, batch: int) -> None:
    """Before, every job failed with the driver's error (its SQL and parameters in the reason)."""
    with _postgres_env(tmp_path) as (env, database):
        entry_ids = _decided(env)
        worker = _worker_on(env, _reader(env, database))
        worker.config = env.config(batch_size=batch)
        try:
            with pytest.raises(RefusalError, match=f"product database .*{database.name}_reader.* permission denied"):
                worker.run(stop=_within(WAIT_SECONDS))
        finally:
            worker.engine.dispose()
        _assert_kept(env)
        assert env.worker().run()["completed"] == len(NAMES)
        _assert_applied(env, entry_ids)


def _entries_of_the_wrong_type(env: ReviewEnv, collection: str = "review:entries") -> Callable[[], None]:
    """The collection's hash made a string (another program's key under the prefix); returns the mending."""
    store = env.queue.store
    assert isinstance(store, RedisDocStore)
    entries = f"{env.prefix}:{collection}"
    store.client.rename(entries, f"{entries}:kept")
    store.client.set(entries, "not a hash")
    return lambda: store.client.rename(f"{entries}:kept", entries)


def test_a_review_queue_key_of_the_wrong_type_stops_the_worker(tmp_path: Path) -> None:
    """The entries' hash is a string (another program's key under the prefix): before, the worker took
    WRONGTYPE for an outage of the review queue and waited, forever."""
    with _postgres_env(tmp_path) as (env, _):
        entry_ids = _decided(env)
        mend = _entries_of_the_wrong_type(env)
        worker = env.worker()
        with pytest.raises(RefusalError, match=f"review queue on Redis \\({env.prefix}\\): WRONGTYPE"):
            worker.run(stop=_within(WAIT_SECONDS))
        mend()
        _assert_kept(env)
        assert env.worker().run()["completed"] == len(NAMES)
        _assert_applied(env, entry_ids)


@pytest.mark.parametrize("collection", ["review:entries", "tasks:approved"])  # met applying; met leasing
def test_the_admins_apply_worker_says_a_refusal_and_applies_once_the_store_is_mended(tmp_path: Path,
                                                                                      collection: str) -> None:
    """In the admin the worker is a thread beside the pages: a refusal ends neither the admin nor the
    applying. It is said, tried again after a while, and the decisions are applied once the key of
    the wrong type is gone."""
    from recordhound.admin.app import apply_until_stopped

    with _postgres_env(tmp_path) as (env, _):
        entry_ids = _decided(env)
        mend = _entries_of_the_wrong_type(env, collection)
        stop = threading.Event()
        thread = threading.Thread(target=apply_until_stopped, args=(env.worker(), stop.is_set, 0.2))
        thread.start()
        try:
            time.sleep(1.0)  # refused, said, tried again: still refused
            assert thread.is_alive()
            assert env.queue.jobs("completed") == [] and env.queue.jobs("failed") == []  # nothing applied yet
            mend()
            deadline = time.monotonic() + WAIT_SECONDS
            while len(env.queue.jobs("completed")) < len(NAMES):
                assert time.monotonic() < deadline and thread.is_alive(), env.queue.counts()
                time.sleep(0.1)
        finally:
            stop.set()
            thread.join(30)
        assert not thread.is_alive()
        assert env.queue.jobs("failed") == []
        _assert_applied(env, entry_ids)
