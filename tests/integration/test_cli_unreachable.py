"""Every `recordhound` command that meets a product database or a Redis it cannot reach says so in one
`error:` line and exits 75 (EX_TEMPFAIL: the same command is worth running again); one that answers and
refuses (no such database, a SQLite file that cannot be opened) is one line and exit 2. Before, `db upgrade`,
`alerts`, `apply`, `admin`, `metrics`, `import` and the `frontier` commands on Redis printed the driver's
traceback (exit 1), and `review list` on an unreachable Redis exited 2."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from scrapy.settings import Settings
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.pool import NullPool

from recordhound.exceptions import Unavailable
from recordhound.preflight import unreachable
from tests.redisserver import RedisServer
from tests.services import PG_ADMIN_URL, REDIS_URL, PostgresDatabase, crawl_env

PG_DOWN = "postgresql+psycopg://nobody@127.0.0.1:1/catalog"  # nothing listens on port 1
REDIS_DOWN = "redis://127.0.0.1:1/0"
CLUSTER_DOWN = "redis+cluster://127.0.0.1:1/0"
_NO_DB = make_url(PG_ADMIN_URL).set(database="recordhound_no_such_database").render_as_string(hide_password=False)
_NO_DB_INDEX = make_url(REDIS_URL).set(database="99999").render_as_string(hide_password=False)
_WRONG_USER = make_url(REDIS_URL).set(username="recordhound-no-such-user", password="wrong").render_as_string(
    hide_password=False)

PRODUCT_DB_COMMANDS = {
    "db upgrade": ["db", "upgrade"],
    "alerts list": ["alerts", "list"],
    "alerts deliveries": ["alerts", "deliveries"],
    "alerts send": ["alerts", "send"],
    "apply": ["apply"],
    "admin create-user": ["admin", "create-user", "someone"],
    "admin": ["admin", "--port", "0"],
    "metrics": ["metrics", "--port", "0"],
    "import": ["import", "demo_feed"],
    "job list": ["job", "list"],
}
REDIS_COMMANDS = {
    "frontier status": ["frontier", "status"],
    "frontier failed": ["frontier", "failed"],
    "frontier verify": ["frontier", "verify"],
    "review list": ["review", "list"],
    "apply": ["apply"],
}


def _run(tmp_path: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    values = {"DATABASE_URL": f"sqlite:///{tmp_path / 'catalog.sqlite3'}", "REDIS_URL": "", **env}
    return subprocess.run([sys.executable, "-m", "recordhound", *args], cwd=tmp_path, env=crawl_env(**values),
                          input="a-password-of-some-length\n", capture_output=True, text=True, timeout=60)


def _one_error_line(result: subprocess.CompletedProcess[str], code: int, starts: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == code and "Traceback" not in output, output[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(starts), output[-3000:]
    assert result.stderr.rstrip().endswith(errors[0]), output[-3000:]


@pytest.mark.parametrize("command", sorted(PRODUCT_DB_COMMANDS))
def test_a_product_database_that_does_not_answer_is_one_line_and_exit_75(command: str, tmp_path: Path) -> None:
    result = _run(tmp_path, PRODUCT_DB_COMMANDS[command], DATABASE_URL=PG_DOWN)
    _one_error_line(result, 75, f"error: cannot reach the product database at DATABASE_URL={PG_DOWN}: ")


@pytest.mark.parametrize("command", sorted(REDIS_COMMANDS))
@pytest.mark.parametrize("url", [REDIS_DOWN, CLUSTER_DOWN])
def test_a_redis_that_does_not_answer_is_one_line_and_exit_75(command: str, url: str, tmp_path: Path) -> None:
    result = _run(tmp_path, REDIS_COMMANDS[command], REDIS_URL=url)
    _one_error_line(result, 75, f"error: cannot reach Redis at REDIS_URL={url}: ")


def test_tls_at_a_redis_that_does_not_speak_it_says_so(tmp_path: Path) -> None:
    """``rediss://`` at the shared Redis (no TLS): it never answers the handshake. Before, the advice was to
    start the Redis that runs."""
    tls = make_url(REDIS_URL).set(drivername="rediss").render_as_string(hide_password=False)
    result = _run(tmp_path, REDIS_COMMANDS["frontier status"], REDIS_URL=tls)
    _one_error_line(result, 75, f"error: cannot reach Redis at REDIS_URL={tls}: ")
    assert "a Redis without TLS never answers rediss://" in result.stderr, result.stderr


@pytest.mark.parametrize("command", ["frontier status", "frontier failed", "review list"])  # (apply: its own words)
@pytest.mark.parametrize("url", [_WRONG_USER, _NO_DB_INDEX])
def test_a_redis_that_refuses_is_one_line_and_exit_2_saying_what_to_check(command: str, url: str,
                                                                            tmp_path: Path) -> None:
    result = _run(tmp_path, REDIS_COMMANDS[command], REDIS_URL=url)
    _one_error_line(result, 2, "error: cannot reach Redis at REDIS_URL=")
    assert "check the user, password and database index in REDIS_URL" in result.stderr, result.stderr


@pytest.mark.parametrize("url", [_WRONG_USER, _NO_DB_INDEX])
def test_a_following_apply_worker_that_a_redis_refuses_ends_in_one_line_and_exit_2(url: str, tmp_path: Path) -> None:
    """A following apply worker waits for a Redis that does not answer; one that answers and refuses ends it (an
    adversarial review found the database index waited for, forever)."""
    _one_error_line(_run(tmp_path, ["apply", "--follow"], REDIS_URL=url), 2, "error: ")


def test_a_redis_busy_with_a_long_script_is_one_line_and_exit_75(tmp_path: Path) -> None:
    """A Redis that answers BUSY (a script past its time limit) will serve again: exit 75, for the frontier's
    commands and the review queue's alike (before: a traceback, and exit 2 through the review queue)."""
    server = RedisServer(tmp_path / "busy", "--save", "", "--lua-time-limit", "100").start()
    looping = server.client()
    runner = threading.Thread(target=_ignoring_errors, args=(lambda: looping.eval("while true do end", 0),))
    try:
        runner.start()
        time.sleep(0.5)  # past the time limit: every other client is answered BUSY
        results = {command: _run(tmp_path, REDIS_COMMANDS[command], REDIS_URL=server.url)
                   for command in ("frontier status", "review list")}
        server.client().script_kill()
        runner.join(10)
    finally:
        server.kill()
    for command, result in results.items():
        _one_error_line(result, 75, f"error: cannot reach Redis at REDIS_URL={server.url}: BUSY")
        assert "it answers that it cannot serve now" in result.stderr, (command, result.stderr)


def test_a_database_error_that_is_no_lost_connection_keeps_its_traceback(tmp_path: Path) -> None:
    """SQLAlchemy raises a commit's error without a statement too, as it does a connection's: a constraint
    that fails at COMMIT (a deferred foreign key, on a real PostgreSQL) is not "cannot reach"; a refused
    connection to the same server's port 1 is."""
    with PostgresDatabase() as database:
        engine = create_engine(database.url, poolclass=NullPool)
        try:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE parent (id int PRIMARY KEY)"))
                conn.execute(text("CREATE TABLE child (parent_id int REFERENCES parent DEFERRABLE INITIALLY DEFERRED)"))
            with pytest.raises(IntegrityError) as failed, engine.begin() as conn:
                conn.execute(text("INSERT INTO child VALUES (1)"))  # fails at COMMIT
        finally:
            engine.dispose()
        assert failed.value.statement is None
        assert unreachable(failed.value, lambda: Settings({"RECORDHOUND_DATABASE_URL": database.url})) is None
        dropped = _dropped_by_the_server(database.url)  # not an OperationalError, and the statement is known
        said = unreachable(dropped, lambda: Settings({"RECORDHOUND_DATABASE_URL": database.url}))
        assert isinstance(said, Unavailable) and "idle-in-transaction timeout" in str(said), (dropped, said)
        with pytest.raises(OperationalError) as refused:
            create_engine(PG_DOWN, poolclass=NullPool).connect()
    said = unreachable(refused.value, lambda: Settings({"RECORDHOUND_DATABASE_URL": PG_DOWN}))
    assert isinstance(said, Unavailable) and str(said).startswith(f"cannot reach the product database at DATABASE_URL={PG_DOWN}")


@pytest.mark.parametrize("command", ["db upgrade", "alerts list", "admin create-user", "apply --follow"])
@pytest.mark.parametrize("database", ["postgresql, no such database", "sqlite, no such folder"])
def test_a_product_database_that_refuses_is_one_line_and_exit_2(command: str, database: str, tmp_path: Path) -> None:
    """(A following apply worker waits for a database that does not answer yet: one that refuses ends it.)"""
    url = _NO_DB if database.startswith("postgresql") else "sqlite:////proc/1/no-such-folder/catalog.sqlite3"
    result = _run(tmp_path, {**PRODUCT_DB_COMMANDS, "apply --follow": ["apply", "--follow"]}[command], DATABASE_URL=url)
    _one_error_line(result, 2, "error: cannot reach the product database at DATABASE_URL=")
    assert "recordhound_no_such_database" in result.stderr or "no-such-folder" in result.stderr


def test_a_sqlite_file_another_process_holds_locked_is_one_line_to_try_again(tmp_path: Path) -> None:
    """A SQLite file locked by another writer past the busy timeout, met at a statement (not at the
    connection): one line, ``Unavailable``, saying so (the file is fine: another process holds it)."""
    path = tmp_path / "catalog.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x int)")
    holder.execute("BEGIN IMMEDIATE")
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool, connect_args={"timeout": 0.1})
    try:
        with pytest.raises(OperationalError) as locked, engine.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        engine.dispose()
        holder.close()
    assert locked.value.statement is not None
    said = unreachable(locked.value, lambda: Settings({"RECORDHOUND_DATABASE_URL": f"sqlite:///{path}"}))
    assert isinstance(said, Unavailable) and "another process holds it locked" in str(said), said


def _dropped_by_the_server(url: str) -> DBAPIError:
    """The error of a statement on a connection PostgreSQL closed (its idle-in-transaction timeout: an
    ``InternalError`` to psycopg, the connection invalidated)."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with pytest.raises(DBAPIError) as dropped, engine.connect() as conn:
            conn.execute(text("SET idle_in_transaction_session_timeout = 100"))
            conn.execute(text("SELECT 1"))
            time.sleep(0.5)
            conn.execute(text("SELECT 1"))
    finally:
        engine.dispose()
    assert dropped.value.connection_invalidated, dropped.value
    return dropped.value


def _ignoring_errors(call: Callable[[], object]) -> None:
    """``call()``, its error ignored (the script the test kills ends its caller's call with one)."""
    try:
        call()
    except Exception:  # noqa: BLE001 - any error of the killed script's call
        pass
