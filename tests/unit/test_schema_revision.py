"""The schema's revision as the start-up check reads it, without SQLAlchemy (``db/revision.py``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from recordhound.db.revision import NotPlain, Unreachable, is_newer, packaged_head, stored_revision, unusable_schema


def _database(path: Path, *revisions: str) -> str:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    connection.executemany("INSERT INTO alembic_version VALUES (?)", [(r,) for r in revisions])
    connection.commit()
    connection.close()
    return f"sqlite:///{path}"


def test_a_sqlite_file_s_revision_is_its_one_row(tmp_path: Path) -> None:
    assert stored_revision(_database(tmp_path / "a.sqlite3", "0007")) == "0007"
    assert stored_revision(_database(tmp_path / "b.sqlite3")) is None  # no row: Alembic's to say
    assert stored_revision(f"sqlite+pysqlite:///{tmp_path / 'new.sqlite3'}") is None  # no schema yet
    assert stored_revision("sqlite://") is None and stored_revision("sqlite:///:memory:") is None


def test_what_cannot_be_read_says_why_and_other_urls_are_left_to_sqlalchemy(tmp_path: Path) -> None:
    (tmp_path / "junk.sqlite3").write_bytes(b"not a database at all" * 100)
    with pytest.raises(Unreachable, match="not a database"):
        stored_revision(f"sqlite:///{tmp_path / 'junk.sqlite3'}")
    with pytest.raises(Unreachable, match="unable to open"):
        stored_revision(f"sqlite:///{tmp_path / 'no' / 'such' / 'folder.sqlite3'}")
    for url in ("mysql+pymysql://u@h/db", "sqlite:///file:x.db?mode=ro&uri=true", "postgresql+psycopg:///db?host=/run",
                "not a url"):
        with pytest.raises(NotPlain):
            stored_revision(url)


def test_only_a_numbered_revision_above_the_packaged_head_is_newer() -> None:
    head = packaged_head()
    assert not is_newer(head) and not is_newer(None) and not is_newer("0001")
    assert is_newer(f"{int(head) + 1:04d}") and is_newer("9999")
    assert not is_newer("ae1027a6acf") and not is_newer("99999")  # not one of ours: see below


def test_a_revision_newer_than_the_code_s_or_not_recordhound_s_cannot_be_migrated() -> None:
    head = packaged_head()
    for migratable in (None, "0001", head):
        assert unusable_schema("x.db", migratable) is None
    for newer in (f"{int(head) + 1:04d}", "9999"):
        assert f"x.db has schema revision {newer}, newer than this recordhound's {head}" in str(
            unusable_schema("x.db", newer))
    for theirs in ("ae1027a6acf", "99999", "001", "", "1a2b"):  # another application's (Alembic's own ids: hex)
        said = str(unusable_schema("x.db", theirs))
        assert f"x.db has schema revision {theirs!r}, which is not recordhound's" in said


def test_the_connect_timeout_is_10_s_unless_the_url_or_libpq_s_environment_says_another(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from recordhound.db import pg_connect_args

    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    monkeypatch.delenv("PGSERVICE", raising=False)
    assert pg_connect_args("postgresql+psycopg://u@h/db") == {"connect_timeout": 10}
    assert pg_connect_args("postgresql+psycopg://u:pa#ss@h/db?connect_timeout=3") == {}  # a '#' in the password
    assert pg_connect_args("postgresql+psycopg://u@h/db?connect_timeout=3") == {}
    assert pg_connect_args("postgresql+psycopg:///db?service=catalog") == {}
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "3")
    assert pg_connect_args("postgresql+psycopg://u@h/db") == {}
