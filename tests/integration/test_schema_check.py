"""A store that opens on a database already at the packaged head neither imports Alembic nor loads
the migration scripts (a node's start-up), on SQLite and PostgreSQL; one behind the head is still
migrated; and the head read from the files' names is Alembic's head."""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy import text

from recordhound.db.engine import make_engine
from recordhound.db.migrate import current_revision, head_revision, open_database, packaged_head, upgrade
from tests.services import crawl_env

PROBE = """
import sys
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
upgrade(make_engine(sys.argv[1]))
print(sorted(name for name in sys.modules if name.split(".")[0] == "alembic"))
"""


def _alembic_modules_after_upgrade(database_url: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, database_url], capture_output=True, text=True, timeout=120,
                          env=crawl_env())  # this checkout's recordhound, whichever the venv points at
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_head_read_from_file_names_is_alembics_head_and_every_revision_is_named_after_its_file() -> None:
    from alembic.script import ScriptDirectory

    from recordhound.db.migrate import alembic_config

    assert packaged_head() == head_revision()
    scripts = ScriptDirectory.from_config(alembic_config())
    for script in scripts.walk_revisions():
        assert script.path is not None and script.path.rsplit("/", 1)[-1].startswith(f"{script.revision}_")
    assert len(scripts.get_heads()) == 1  # one line of history


def test_a_database_at_the_head_is_opened_without_alembic(database_url: str) -> None:
    open_database(database_url).dispose()
    assert _alembic_modules_after_upgrade(database_url) == "[]"


def test_a_database_behind_the_head_is_still_migrated(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine, "0011")
        assert current_revision(engine) == "0011"
        assert _alembic_modules_after_upgrade(database_url) != "[]"
        assert current_revision(engine) == head_revision()
        with engine.connect() as conn:  # 0012's column is there
            conn.execute(text("SELECT names_key FROM releases")).all()
    finally:
        engine.dispose()
