from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from scrapy.settings import Settings

from recordhound import settings as project_settings
from recordhound.config import StoreConfig
from recordhound.db.engine import make_engine
from recordhound.db.migrate import current_revision, head_revision, upgrade
from recordhound.db.models import Base
from recordhound.exceptions import ConfigError


def test_migrations_create_exactly_the_models(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'm.sqlite3'}")
    upgrade(engine)
    upgrade(engine)  # a second upgrade is a no-op
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []


def _settings(**overrides: object) -> Settings:
    values = {k: getattr(project_settings, k) for k in dir(project_settings) if k.isupper()}
    return Settings({**values, **overrides})


@pytest.mark.parametrize(("name", "value", "problem"), [
    ("RECORDHOUND_STORE_BATCH_SIZE", "lots", "whole number"),
    ("RECORDHOUND_STORE_BATCH_SIZE", 0, "above 0"),
    ("RECORDHOUND_STORE_FLUSH_SECONDS", -1, "seconds above 0"),
    ("RECORDHOUND_STORE_FLUSH_SECONDS", "nan", "got 'nan'"),  # (passes every comparison)
    ("RECORDHOUND_STORE_FLUSH_SECONDS", "inf", "got 'inf'"),
    ("RECORDHOUND_DB_AUTO_UPGRADE", "perhaps", "true/false"),
    ("RECORDHOUND_DATABASE_URL", "postgres-at-home", "SQLAlchemy URL"),
    ("RECORDHOUND_DATABASE_URL", "mysql://shop:secret@127.0.0.1/catalog", "SQLite or PostgreSQL .* not mysql"),
    ("RECORDHOUND_DATABASE_URL", "postgresql+psycopg2://shop@db/catalog", r"not postgresql\+psycopg2"),
    ("RECORDHOUND_DATABASE_URL", "oracle+cx_oracle://shop@db/catalog", "not oracle"),
    ("RECORDHOUND_STORE_WRITER", "fork", "one of process, thread"),
])
def test_bad_settings_fail_at_start_naming_the_setting(name: str, value: object, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        StoreConfig.from_settings(_settings(**{name: value}))
    assert name.removeprefix("RECORDHOUND_") in str(caught.value)


def test_a_database_url_of_another_database_hides_its_password() -> None:
    with pytest.raises(ConfigError) as caught:
        StoreConfig.from_settings(_settings(RECORDHOUND_DATABASE_URL="mysql://shop:secret@127.0.0.1/catalog"))
    assert "secret" not in str(caught.value) and "mysql://shop:***@127.0.0.1/catalog" in str(caught.value)


@pytest.mark.parametrize(("given", "read"), [
    ("postgres://shop:pw@db:5433/catalog", "postgresql://shop:pw@db:5433/catalog"),  # what many hosts give
    ("postgres+psycopg://shop@db/catalog", "postgresql+psycopg://shop@db/catalog"),
    ("PostgreSQL+Psycopg://shop@db/catalog", "postgresql+psycopg://shop@db/catalog"),
    ("postgresql://shop@db/catalog", "postgresql://shop@db/catalog"),
    ("sqlite:///rh.sqlite3", "sqlite:///rh.sqlite3"),
    ("sqlite+pysqlite:////data/rh.sqlite3", "sqlite+pysqlite:////data/rh.sqlite3"),
])
def test_the_product_database_urls_recordhound_reads(given: str, read: str) -> None:
    assert StoreConfig.from_settings(_settings(RECORDHOUND_DATABASE_URL=given)).database_url == read
