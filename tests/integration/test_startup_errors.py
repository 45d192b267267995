"""A service that is down (a Redis Cluster too), a profile that does not exist or a bad spider
argument, a review setting that is wrong while the store is off, or a review queue file that cannot be
opened, or a crawl whose `recordhound worker` is gone, at start-up: one line, exit 1 (a review queue
file: before, the store's writer failed to start and was started again for as long as the crawl ran);
a service that cannot be reached exits 75 instead (EX_TEMPFAIL: try again later; before, 1, and a
`recordhound worker` failed the job)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.faultproxy import FaultProxy
from tests.redisserver import RedisServer
from tests.services import PG_ADMIN_URL, REDIS_URL, PostgresDatabase, run_crawl

_NO_DB = make_url(PG_ADMIN_URL).set(database="recordhound_no_such_database").render_as_string(hide_password=False)
_WRONG_USER = make_url(REDIS_URL).set(username="recordhound-no-such-user", password="wrong").render_as_string(
    hide_password=False)
_NO_DB_INDEX = make_url(REDIS_URL).set(database="99999").render_as_string(hide_password=False)

CASES = {
    "redis": ({"REDIS_URL": "redis://127.0.0.1:1/0"}, "source=demo",
              "error: cannot reach Redis at REDIS_URL=redis://127.0.0.1:1/0"),
    "postgresql": ({"DATABASE_URL": "postgresql+psycopg://nobody@127.0.0.1:1/catalog"}, "source=demo",
                   "error: cannot reach the product database at DATABASE_URL=postgresql+psycopg://nobody@127.0.0.1:1/catalog"),
    "profile": ({}, "source=no-such-shop", "error: invalid source profile no-such-shop.yaml"),
    "review file": ({}, "source=demo", "error: cannot open the review queue file /proc/1/no-such-folder/review.sqlite3"),
    "redis cluster": ({"REDIS_URL": "redis+cluster://127.0.0.1:1/0"}, "source=demo",
                      "error: cannot reach Redis at REDIS_URL=redis+cluster://127.0.0.1:1/0"),
    "base url": ({}, "source=demo", "error: invalid source profile "),
    "store off, a review setting": ({}, "source=demo", "error: RECORDHOUND_APPLY_LEASE_SECONDS must be"),
    # started by a `recordhound worker` (pid 1 here, not its parent) that is gone: its job is taken over
    "worker gone": ({"RECORDHOUND_WORKER": "1 120"}, "source=demo",
                    "error: the worker that started this crawl is gone"),
    # a service that answers and refuses: no wait cures it (exit 1, not 75)
    "postgresql, no such database": ({"DATABASE_URL": _NO_DB}, "source=demo",
                                     "error: cannot reach the product database at DATABASE_URL="),
    "redis, wrong user": ({"REDIS_URL": _WRONG_USER}, "source=demo", "error: cannot reach Redis at REDIS_URL="),
    "redis, no such database index": ({"REDIS_URL": _NO_DB_INDEX}, "source=demo",
                                      "error: cannot reach Redis at REDIS_URL="),
    "sqlite, no such folder": ({"DATABASE_URL": "sqlite:////proc/1/no-such-folder/product.sqlite3"}, "source=demo",
                               "error: cannot reach the product database at DATABASE_URL=sqlite:////proc/1/"),
}
UNAVAILABLE = {"redis", "postgresql", "redis cluster"}  # exit 75: nothing was done, worth another try
SETTINGS = {"review file": ("-s", "RECORDHOUND_REVIEW_PATH=/proc/1/no-such-folder/review.sqlite3"),
            "base url": ("-a", "base_url=notaurl"),
            "store off, a review setting": ("-s", "RECORDHOUND_STORE_ENABLED=false",
                                            "-s", "RECORDHOUND_APPLY_LEASE_SECONDS=0")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_start_up_error_is_one_line_and_exit_1_or_75(case: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    env, source, message = CASES[case]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    database = env.get("DATABASE_URL", f"sqlite:///{tmp_path / 'db.sqlite3'}")
    result = run_crawl(tmp_path, database, "-a", source, *SETTINGS.get(case, ()), timeout=60)
    assert result.returncode == (75 if case in UNAVAILABLE else 1), result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(message), result.stderr[-2000:]
    assert result.stderr.rstrip().endswith(errors[0])


def test_a_postgresql_that_never_answers_is_one_line_and_exit_75_not_a_hang(tmp_path: Path) -> None:
    """The server's port takes the connection and says nothing (a frozen host, a stalled network):
    the start-up check gives up after libpq's connect timeout (10 s unless the URL sets
    ``connect_timeout``) with one line; before, the crawl waited as long as the server did."""
    with PostgresDatabase() as database, FaultProxy(make_url(database.url).port or 5432) as proxy:
        proxy.stall(300)
        url = make_url(database.url).set(port=proxy.port).render_as_string(hide_password=False)
        result = run_crawl(tmp_path, url, "-a", "source=demo", timeout=60)  # a hang fails here
    assert result.returncode == 75 and "Traceback" not in result.stderr, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: cannot reach the product database"), result.stderr[-2000:]
    assert "timeout" in errors[0], errors


def test_any_other_start_up_error_is_logged_once_with_its_traceback_and_exit_1(tmp_path: Path) -> None:
    """An error that is not recordhound's own (here a component whose module does not exist) keeps
    Scrapy's report: the error and its traceback, once. Before, the crawl exited 1 without a word
    (reading the task's error for a user error kept asyncio from logging it)."""
    result = run_crawl(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}", "-a", "source=demo",
                       "-s", 'EXTENSIONS={"no_such_module.Ext": 500}', timeout=60)
    assert result.returncode == 1
    assert "The crawl failed: ModuleNotFoundError: No module named 'no_such_module'" in result.stderr, result.stderr[-3000:]
    assert result.stderr.count("Traceback (most recent call last)") == 1, result.stderr[-3000:]


def test_a_redis_busy_with_a_long_script_is_waited_for_exit_75(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Redis that answers BUSY (a script running past its time limit) cannot serve now and will again:
    exit 75, as for one that does not answer, not 1 (a review found the first version's classification
    calling every Redis error reply a refusal)."""
    server = RedisServer(tmp_path / "busy", "--save", "", "--lua-time-limit", "100").start()
    looping = server.client()
    runner = threading.Thread(target=lambda: _ignoring_errors(lambda: looping.eval("while true do end", 0)))
    try:
        runner.start()
        time.sleep(0.5)  # past the time limit: every other client is answered BUSY
        monkeypatch.setenv("REDIS_URL", server.url)
        result = run_crawl(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}", "-a", "source=demo", timeout=60)
        server.client().script_kill()
        runner.join(10)
    finally:
        server.kill()
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 75, result.stderr[-2000:]
    assert len(errors) == 1 and "BUSY" in errors[0], result.stderr[-2000:]


def _ignoring_errors(call: Callable[[], object]) -> None:
    """``call()``, its error ignored (the script the test kills ends its caller's call with one)."""
    try:
        call()
    except Exception:  # noqa: BLE001 - any error of the killed script's call
        pass
