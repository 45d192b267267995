"""The product database's URL as users give it: ``postgres://`` (what many hosts put in DATABASE_URL) reads as
``postgresql://``, and a crawl through it stores the shop's truth; a URL of a database or driver recordhound
does not store to (MySQL, psycopg2) is one ``error:`` line naming it, its password hidden, from the crawl
(exit 1) and from the commands (exit 2). Before, the first was SQLAlchemy's "Can't load plugin" and the
second a ``ModuleNotFoundError``, both as tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from recordhound.demo.process import ShopProcess
from tests.integration.test_jobs_worker import _env
from tests.integration.truthcheck import assert_ids_consecutive, assert_product_db_matches
from tests.services import PostgresDatabase, run_crawl


def _recordhound(tmp_path: Path, url: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recordhound", *command], cwd=tmp_path, env=_env(url),
                          capture_output=True, text=True, timeout=120)


def test_a_postgres_url_as_hosts_give_it_is_postgresql(tmp_path: Path) -> None:
    with PostgresDatabase() as database, ShopProcess(40, seed=77) as shop:
        hosts = "postgres://" + database.url.split("://", 1)[1]
        upgraded = _recordhound(tmp_path, hosts, "db", "upgrade")
        assert upgraded.returncode == 0, upgraded.stderr[-3000:]
        result = run_crawl(tmp_path, hosts, "-a", "source=demo", "-a", f"base_url={shop.url}", timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        assert_product_db_matches(database.url, shop.truth())
        assert_ids_consecutive(database.url)


def test_a_database_recordhound_does_not_store_to_is_one_line(tmp_path: Path) -> None:
    for url, named in (("mysql://shop:secret@127.0.0.1:1/catalog", "not mysql"),
                       ("postgresql+psycopg2://shop:secret@127.0.0.1:1/catalog", "not postgresql+psycopg2")):
        for command in (["db", "upgrade"], ["job", "list"], ["apply"], ["alerts", "list"]):
            said = _recordhound(tmp_path, url, *command)
            assert said.returncode == 2 and said.stderr.count("\n") == 1, (command, said.stderr[-3000:])
            assert said.stderr.startswith("error: ") and named in said.stderr and "secret" not in said.stderr, \
                (command, said.stderr)
        result = run_crawl(tmp_path, url, "-a", "source=demo", "-a", "base_url=http://127.0.0.1:1", timeout=120)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
        assert len(errors) == 1 and named in errors[0] and "secret" not in result.stderr, result.stderr[-3000:]
