"""DATABASE_URL pointed at another application's database, one Alembic manages too (its ``alembic_version``
holds a revision no recordhound wrote): every command that opens the product database says so in one
``error:`` line, exit 2, and a crawl stops before it fetches a page (exit 1); nothing is written there, the
other application's table kept as it was. Before, Alembic's "Can't locate revision" came as a traceback.
SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, inspect, text

from recordhound.demo.process import ShopProcess
from tests.integration.test_jobs_worker import _env
from tests.services import run_crawl

THEIRS = "ae1027a6acf"  # an Alembic revision id as Alembic makes them


def _their_database(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
        conn.execute(text(f"INSERT INTO alembic_version VALUES ('{THEIRS}')"))
        conn.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total VARCHAR(20))"))
        conn.execute(text("INSERT INTO invoices VALUES (1, '12.50')"))
    engine.dispose()


def _untouched(url: str) -> None:
    engine = create_engine(url)
    try:
        assert sorted(inspect(engine).get_table_names()) == ["alembic_version", "invoices"]
        with engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).all() == [(THEIRS,)]
            assert conn.execute(text("SELECT id, total FROM invoices")).all() == [(1, "12.50")]
    finally:
        engine.dispose()


def test_another_application_s_database_is_one_line_and_left_as_it_was(database_url: str, tmp_path: Path) -> None:
    _their_database(database_url)
    for command in (["db", "upgrade"], ["apply"], ["apply", "--follow"], ["job", "list"], ["worker", "--once"]):
        said = subprocess.run([sys.executable, "-m", "recordhound", *command], cwd=tmp_path, env=_env(database_url),
                              capture_output=True, text=True, timeout=120)
        assert said.returncode == 2 and said.stderr.count("\n") == 1, (command, said.stderr[-3000:])
        assert said.stderr.startswith("error: ") and f"schema revision '{THEIRS}'" in said.stderr and \
            "another application" in said.stderr, (command, said.stderr)
    with ShopProcess(40, seed=76) as shop:
        result = run_crawl(tmp_path, database_url, "-a", "source=demo", "-a", f"base_url={shop.url}", timeout=120)
        served = shop.pages_served()
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
    assert len(errors) == 1 and f"schema revision '{THEIRS}'" in errors[0], result.stderr[-3000:]
    assert served == 0
    _untouched(database_url)
