"""The apply worker meets a PostgreSQL outage (its role locked out, its sessions killed): it waits and
writes once the database is back; no decision fails for it, and an entry already decided stays decided.

Real ``recordhound apply`` processes (Redis queue, PostgreSQL product DB of its own role), the outage
before a batch's write (a following worker given decisions while the database is away) and after it
(the worker frozen at ``apply.after_write``, its entries about to be settled and its held items
released): every job completed, none failed, the names and offers in the product DB exactly the ones
approved, IDs consecutive and sequences at ``max(id)``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from recordhound.catalog.apply import ApplyWorker
from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.review.docstore import RedisDocStore
from recordhound.review.queue import ReviewError, ReviewQueue
from tests.integration.review_env import ReviewEnv, _open, review_env
from tests.integration.test_held_prices_decided import seen
from tests.integration.test_review_queue import offer_skus, release, rows
from tests.faultproxy import FaultProxy
from tests.integration.truthcheck import assert_ids_consecutive
from tests.services import PostgresDatabase, redis_url, unique_prefix

NAMES = ["Outage Artist A", "Outage Artist B", "Outage Artist C"]
RETRY_LOGGED = "applying them again in"  # the worker's warning while the database is away
FOLLOWING = "applying the decisions of"  # the worker's line once it has started
STARTING = "(starting: tried again in"  # a following worker's line per try while its services do not answer yet
LEASING = "The review queue is unreachable"  # ... and while its queue does not answer a lease


@pytest.fixture
def outage_db(tmp_path: Path) -> Iterator[tuple[ReviewEnv, PostgresDatabase]]:
    with PostgresDatabase(own_role=True) as database:
        env = _open("redis", database.url, redis_url(), unique_prefix(), str(tmp_path / "review.sqlite3"))
        try:
            yield env, database
        finally:
            env.queue.store.drop()
            env.queue.close()
            env.engine.dispose()


def _apply(env: ReviewEnv, tmp_path: Path, *args: str, failpoints: str = "") -> tuple[subprocess.Popen[str], Path]:
    log = tmp_path / f"apply-{time.monotonic_ns()}.log"
    command = [sys.executable, "-m", "recordhound", "apply", "-s", "RECORDHOUND_APPLY_POLL_SECONDS=0.1"]
    for setting in env.settings():
        command += ["-s", setting]
    command += args  # (after the queue's settings: a test's ``-s`` replaces one of them)
    process_env = {**os.environ, "DATABASE_URL": env.database_url, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
                   "RECORDHOUND_FAILPOINTS": failpoints}
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=process_env, stdout=out, stderr=subprocess.STDOUT,
                                   text=True)
    return process, log


def _wait_for(condition: object, what: str, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} within {seconds} s:\n{log.read_text()[-3000:]}")


def _queue_names(env: ReviewEnv) -> list[int]:
    """The entries of ``NAMES``, pending (their items parked)."""
    source = env.source()
    env.writer().write(source, [release(f"o{n}", [name]) for n, name in enumerate(NAMES)])
    entries = env.queue.entries()
    assert sorted(e["name"] for e in entries) == NAMES
    return [e["id"] for e in entries]


def _assert_applied(env: ReviewEnv, entry_ids: list[int]) -> None:
    assert len(env.queue.jobs("completed")) == len(NAMES) and env.queue.jobs("failed") == []
    statuses = {env.queue.entry(i)["name"]: env.queue.entry(i)["status"] for i in entry_ids}
    assert statuses == dict.fromkeys(NAMES, "approved"), statuses
    assert sorted(name for (name,) in rows(env, "SELECT name FROM artists")) == NAMES
    assert offer_skus(env) == {f"o{n}" for n in range(len(NAMES))}
    assert_ids_consecutive(env.database_url)


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(10)


def test_a_following_worker_waits_out_an_outage_before_its_write(outage_db: tuple[ReviewEnv, PostgresDatabase],
                                                                 tmp_path: Path) -> None:
    env, database = outage_db
    entry_ids = _queue_names(env)
    worker, log = _apply(env, tmp_path, "--follow")
    try:
        _wait_for(lambda: _other_sessions(env) > 0 and FOLLOWING in log.read_text(),  # (an outage during its
                  "the worker did not open the database", log)  # start is another test's: one line, exit 75)
        database.lock_out()
        for entry_id in entry_ids:
            env.queue.decide(entry_id, "approve")
        _wait_for(lambda: _waited(env, log), "the worker did not wait for the database", log)
        database.let_in()
        _wait_for(lambda: len(env.queue.jobs("completed")) == len(NAMES), "the decisions were not applied", log)
        worker.send_signal(signal.SIGINT)
        assert worker.wait(30) == 0, log.read_text()[-3000:]
    finally:
        database.let_in()
        _stop(worker)
    _assert_applied(env, entry_ids)


def test_a_following_worker_started_while_the_database_is_down_waits_for_it(
        outage_db: tuple[ReviewEnv, PostgresDatabase], tmp_path: Path) -> None:
    """``apply --follow`` is a daemon: started while its role is locked out of PostgreSQL (a service manager
    started it before the database), it waits, one line per try, and applies the decisions once let in.
    Before, it ended at once, exit 75 (the one line of a command that cannot reach its database)."""
    env, database = outage_db
    entry_ids = _decided(env)
    database.lock_out()
    worker, log = _apply(env, tmp_path, "--follow")
    try:
        _started_once_back(env, worker, log, database.let_in, STARTING, signal.SIGINT)
    finally:
        database.let_in()
        _stop(worker)
    assert "cannot reach the product database" in log.read_text()
    _assert_applied(env, entry_ids)


def test_a_following_worker_started_while_the_review_queue_s_redis_is_down_waits_for_it(
        outage_db: tuple[ReviewEnv, PostgresDatabase], tmp_path: Path) -> None:
    """The same with the review queue's Redis refusing every connection (a proxy cut) until the test heals it:
    the worker starts (opening the queue needs no answer) and waits at its lease. Before, it ended there, exit 75."""
    env, _ = outage_db
    entry_ids = _decided(env)
    with FaultProxy(int(env.redis_url.rsplit(":", 1)[1].split("/")[0])) as proxy:
        proxy.cut(600)
        worker, log = _apply(env, tmp_path, "--follow", "-s",
                             f"RECORDHOUND_REDIS_URL={proxy.url(db=int(env.redis_url.rsplit('/', 1)[1] or 0))}")
        try:
            _started_once_back(env, worker, log, proxy.heal, LEASING, signal.SIGTERM)
        finally:
            _stop(worker)
    _assert_applied(env, entry_ids)


def test_a_following_worker_waits_while_another_process_holds_the_embedded_queue_locked(tmp_path: Path) -> None:
    """The embedded queue's file locked by another connection past the worker's busy timeout (the admin's
    request, a ``review`` command) is waited out by a following worker, not its end (a review found it ended
    with exit 2). The queue's connection waits 60 s before it calls the file locked: 0.2 s here."""
    with review_env("embedded", tmp_path) as env:
        entry_ids = _decided(env)
        worker = env.worker()
        env.queue.store.db.execute("PRAGMA busy_timeout = 200")  # type: ignore[attr-defined]
        locker = sqlite3.connect(env.queue_path, isolation_level=None, check_same_thread=False)
        locker.execute("BEGIN EXCLUSIVE")
        unlock = threading.Timer(2.0, lambda: (locker.execute("ROLLBACK"), locker.close()))
        unlock.start()
        deadline = time.monotonic() + 60
        try:
            counts = worker.run(follow=True, stop=lambda: worker.counts["completed"] == len(NAMES)
                                or time.monotonic() > deadline)
        finally:
            unlock.join()
        assert counts["outage_waits"] >= 2 and counts["completed"] == len(NAMES), counts
        _assert_applied(env, entry_ids)


def _decided(env: ReviewEnv) -> list[int]:
    entry_ids = _queue_names(env)
    for entry_id in entry_ids:
        env.queue.decide(entry_id, "approve")
    return entry_ids


def _started_once_back(env: ReviewEnv, worker: subprocess.Popen[str], log: Path, back: Callable[[], None],
                       waiting: str, ending: signal.Signals) -> None:
    """Two tries logged (``waiting`` in each line), nothing applied, the worker running; once ``back()``, every
    decision applied, and ``ending`` (Ctrl-C's, a service manager's SIGTERM) ends the worker: exit 0, its
    summary, no traceback."""
    _wait_for(lambda: log.read_text().count(waiting) >= 2, "the worker did not wait", log)
    assert worker.poll() is None and env.queue.jobs("completed") == [], log.read_text()[-3000:]
    back()
    _wait_for(lambda: len(env.queue.jobs("completed")) == len(NAMES), "the decisions were not applied", log)
    worker.send_signal(ending)
    assert worker.wait(30) == 0, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text() and "applied 3 decisions, 0 failed" in log.read_text(), \
        log.read_text()[-3000:]


@pytest.mark.parametrize("batch", [1, 3])  # one decision per write; the three in one write (the bulk path)
def test_a_worker_waits_out_an_outage_after_its_write(outage_db: tuple[ReviewEnv, PostgresDatabase],
                                                      tmp_path: Path, batch: int) -> None:
    """Frozen after its first write: the entries are settled next, then the items they held are
    released through the writer, which needs the database: it is away by then."""
    env, database = outage_db
    entry_ids = _decided(env)
    worker, log = _apply(env, tmp_path, "-s", f"RECORDHOUND_REVIEW_BATCH_SIZE={batch}",
                         failpoints="apply.after_write=stop")
    try:
        _wait_for(lambda: _frozen(worker.pid), "the worker did not stop at apply.after_write", log)
        database.lock_out()
        worker.send_signal(signal.SIGCONT)
        _wait_for(lambda: _waited(env, log), "the worker did not wait for the database", log)
        database.let_in()
        assert worker.wait(120) == 0, log.read_text()[-3000:]
    finally:
        database.let_in()
        _stop(worker)
    assert "0 failed" in log.read_text()
    _assert_applied(env, entry_ids)


def _waited(env: ReviewEnv, log: Path) -> bool:
    """The worker logged two tries while the database was away; no job failed for it."""
    assert env.queue.jobs("failed") == [], f"a decision failed for an outage:\n{log.read_text()[-3000:]}"
    return log.read_text().count(RETRY_LOGGED) >= 2


def _other_sessions(env: ReviewEnv) -> int:
    """Sessions of the test's database role other than this one (the worker's)."""
    return rows(env, "SELECT count(*) FROM pg_stat_activity WHERE usename = current_user "
                     "AND pid <> pg_backend_pid()")[0][0]


def _frozen(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.parametrize("backend", ["embedded", "redis"])
def test_a_job_failing_after_its_entry_was_settled_leaves_the_entry_decided(backend: str, tmp_path: Path) -> None:
    """The writes were committed and the entry settled (decided): a failure after that fails the job
    (``review retry`` runs it again), never the decision, which cannot be decided a second time."""
    with review_env(backend, tmp_path) as env:
        env.writer().write(env.source(), [release("s1", ["Settled Artist"])])
        (entry,) = env.queue.entries()
        env.queue.decide(entry["id"], "approve")
        (job,) = env.queue.lease_many("w", 30, 10)
        env.queue.settle(job, {"status": "approved", "entity_id": 1})
        env.queue.fail(job, "OSError: the release failed")
        assert env.queue.entry(entry["id"])["status"] == "approved"
        assert [failed["id"] for failed in env.queue.jobs("failed")] == [job["id"]]
        with pytest.raises(ReviewError):
            env.queue.decide(entry["id"], "skip")
        env.queue.retry(job["id"])
        assert env.worker().run()["completed"] == 1
        assert env.queue.entry(entry["id"])["status"] == "approved"
        assert rows(env, "SELECT name FROM artists") == [("Settled Artist",)]
        assert offer_skus(env) == {"s1"}


# ---- a worker back from an outage writes only what it still holds ------------------------------------
def _worker_out_at_the_names(env: ReviewEnv, database: PostgresDatabase) -> ApplyWorker:
    """A worker of its own (engine, queue, name) whose name batch finds PostgreSQL locked out: the
    price job before it in the lease was written and acked."""
    queue = ReviewQueue(RedisDocStore(env.redis_url, env.prefix))
    engine = make_engine(env.database_url)
    worker = ApplyWorker(engine, queue, CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(False, 5.0)),
                         env.config())
    read = queue.entries_by_id

    def locked_out_first(entry_ids: list[int]) -> dict[int, dict[str, Any]]:
        if not worker.counts["outage_waits"]:
            database.lock_out()
        return read(entry_ids)
    queue.entries_by_id = locked_out_first  # type: ignore[method-assign]
    return worker


def _during_the_wait(database: PostgresDatabase, env: ReviewEnv, meanwhile: Any) -> Any:
    """The worker's ``stop``: asked while it waits out the outage; the first time, the database comes
    back and ``meanwhile`` happens (another worker, a crawl, a reviewer), then the worker goes on."""
    happened: list[bool] = []

    def stop() -> bool:
        if not happened:
            happened.append(True)
            database.let_in()
            env.engine.dispose()
            meanwhile()
        return False
    return stop


def _offer_price(env: ReviewEnv) -> Decimal:
    return rows(env, "SELECT price FROM offers WHERE external_id = 'p1'")[0][0]


@pytest.mark.parametrize("meanwhile", ["decided_again", "drifted"])
def test_a_price_written_before_an_outage_is_not_written_again_after_it(
        outage_db: tuple[ReviewEnv, PostgresDatabase], meanwhile: str) -> None:
    """100 → 120 approved (J1) and two names, leased together: J1 is written and acked, then the names
    meet the outage. Meanwhile the shop went back to 100 and another worker applied that decision
    (decided_again), or the price drifted to 121, written at once (drifted). Back, the worker writes
    its names only: before, it wrote J1 again (120 over the later 100), or marked J1's entry superseded
    ("not applied") although its 120 was written."""
    env, database = outage_db
    source = env.source()
    seen(env, source, "100.00")
    assert seen(env, source, "120.00")["prices_held"] == 1
    (held,) = env.queue.entries(kind="price")
    env.queue.decide(held["id"], "approve")
    entry_ids = _queue_names(env)[:2]
    for entry_id in entry_ids:
        env.queue.decide(entry_id, "approve")
    worker = _worker_out_at_the_names(env, database)
    jobs = worker.queue.lease_many(worker.name, 300, 10)
    assert [job["kind"] for job in jobs] == ["price", "artist", "artist"]

    def decided_again() -> None:
        assert seen(env, source, "100.00")["prices_held"] == 1  # 120 → 100: a new entry
        (back,) = env.queue.entries(kind="price")
        env.queue.decide(back["id"], "approve")
        assert env.worker().run()["completed"] == 1

    def drifted() -> None:
        assert seen(env, source, "121.00")["prices_held"] == 0  # under the threshold: written
    worker._apply_through_outages(jobs, _during_the_wait(database, env, locals()[meanwhile]))
    worker.engine.dispose()
    assert worker.counts["outage_waits"] == 1 and worker.counts["completed"] == 3, worker.counts
    expected = {"decided_again": (Decimal("100.00"), [("100.00", "120.00"), ("120.00", "100.00")]),
                "drifted": (Decimal("121.00"), [("100.00", "120.00"), ("120.00", "121.00")])}[meanwhile]
    history = [(f"{old:.2f}", f"{new:.2f}") for old, new in
               rows(env, "SELECT old_price, new_price FROM offer_history ORDER BY id")]
    assert (_offer_price(env), history) == expected
    assert env.queue.entry(held["id"])["status"] == "approved"
    assert sorted(name for (name,) in rows(env, "SELECT name FROM artists")) == ["Artist", *NAMES[:2]]
    assert env.queue.jobs("failed") == []
    assert_ids_consecutive(env.database_url)


def test_a_job_failed_before_an_outage_and_decided_again_stays_replaced(
        outage_db: tuple[ReviewEnv, PostgresDatabase]) -> None:
    """A merge into a missing artist fails (the batch falls back to one by one), then the outage; the
    reviewer decides that entry again meanwhile. Back, the worker leaves the failed job alone: before,
    it failed it again, back in the failed queue (and in completed), its entry "failed" under the new
    decision."""
    env, database = outage_db
    entry_ids = _queue_names(env)
    merge = env.queue.decide(entry_ids[0], "merge", into=999)
    for entry_id in entry_ids[1:]:
        env.queue.decide(entry_id, "approve")
    worker = _worker_out_at_the_names(env, database)
    worker.queue.entries_by_id = env.queue.entries_by_id  # type: ignore[method-assign]  # the fail: then out
    failed = worker.queue.fail

    def fail_then_out(job: dict[str, Any], error: str) -> None:
        failed(job, error)
        if not worker.counts["outage_waits"]:
            database.lock_out()
    worker.queue.fail = fail_then_out  # type: ignore[method-assign]
    jobs = worker.queue.lease_many(worker.name, 300, 10)
    again: list[int] = []
    worker._apply_through_outages(jobs, _during_the_wait(
        database, env, lambda: again.append(env.queue.decide(entry_ids[0], "approve")["id"])))
    worker.engine.dispose()
    assert [job["id"] for job in env.queue.jobs("failed")] == []
    assert merge["id"] in [job["id"] for job in env.queue.jobs("completed")]
    entry = env.queue.entry(entry_ids[0])
    assert (entry["status"], entry["decision"]) == ("queued", again[0])
    assert env.worker().run()["completed"] == 1
    assert sorted(name for (name,) in rows(env, "SELECT name FROM artists")) == NAMES
    assert_ids_consecutive(env.database_url)


def test_retrying_an_expired_price_entry_a_newer_one_replaced_is_refused(tmp_path: Path) -> None:
    """100 → 120 expires unanswered; a crawl holds 100 → 130 in a new entry: bringing the expired one
    back would list two changes of one offer (one stale), so the retry says which entry to decide."""
    with review_env("redis", tmp_path) as env:
        source = env.source()
        seen(env, source, "100.00")
        seen(env, source, "120.00")
        (expiring,) = env.queue.entries(kind="price")
        time.sleep(0.05)
        assert env.queue.expire(0.01) == [int(expiring["id"])]
        assert seen(env, source, "130.00")["prices_held"] == 1
        (expired,) = [job for job in env.queue.jobs("failed") if job["action"] == "expire"]
        with pytest.raises(ReviewError, match="decide that one"):
            env.queue.retry(expired["id"])
        assert [(e["old_price"], e["new_price"]) for e in env.queue.entries(kind="price")] == [("100.00", "130.00")]
