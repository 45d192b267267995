"""Names with no letters or digits ("!!!", "???", "…") are names: each has its own matching key, so
two such artists, labels or styles stay two entities, two review entries and two releases; the
catalogue stored before migration 0013 (where they all shared the empty key) is keyed again."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.db.releases import names_key
from recordhound.items import Release
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue
from tests.integration.test_source_spellings import _downgrade

# band names and titles of this kind exist; the expected keys are written here, not derived
EXPECTED_KEYS = {"!!!": "!!!", "! ! !": "!!!", "???": "???", "…": "...", "Alpha": "alpha"}


def _release(sku: str, title: str, artists: list[str], label: str | None = None,
             styles: list[str] | None = None) -> Release:
    return Release("shop", f"http://shop/{sku}", sku, title, artists, label, None, 2001, styles=styles or [])


def _writer(engine: Engine, tmp_path: Path, trusted: bool) -> tuple[CatalogWriter, ReviewQueue]:
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / f"review-{trusted}.sqlite3")))
    return CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=trusted, price_threshold_pct=100)), queue


def _source(engine: Engine) -> int:
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sources (name, kind, location, metadata) VALUES "
                          "('shop', 'html', 'http://shop/', '{}')"))
        return int(conn.execute(text("SELECT id FROM sources WHERE name = 'shop'")).scalar_one())


def test_keys_of_names_without_letters() -> None:
    from recordhound.text import name_key
    assert {name: name_key(name) for name in EXPECTED_KEYS} == EXPECTED_KEYS


def test_punctuation_names_are_separate_entities_and_releases(database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    writer, queue = _writer(engine, tmp_path, trusted=True)
    try:
        source = _source(engine)
        writer.write(source, [
            _release("a", "!!!", ["!!!"], "???", ["…"]),
            _release("b", "???", ["???"], "!!!", ["---"]),
            _release("c", "!!!", ["Alpha"]),
            _release("d", "???", ["Alpha"]),  # same artist and year, another title: another release
        ])
        with engine.connect() as conn:
            artists = sorted(conn.execute(text("SELECT name, name_key FROM artists")).all())
            labels = sorted(conn.execute(text("SELECT name, name_key FROM labels")).all())
            styles = sorted(conn.execute(text("SELECT name, name_key FROM styles")).all())
            placed = dict(conn.execute(text("SELECT o.external_id, r.title FROM offers o "
                                            "JOIN releases r ON r.id = o.release_id")).all())
            credits = dict(conn.execute(text("SELECT o.external_id, a.name FROM offers o JOIN release_artists ra "
                                             "ON ra.release_id = o.release_id JOIN artists a ON a.id = ra.artist_id")).all())
            count, top = conn.execute(text("SELECT count(*), max(id) FROM releases")).one()
        assert artists == [("!!!", "!!!"), ("???", "???"), ("Alpha", "alpha")]
        assert labels == [("!!!", "!!!"), ("???", "???")]
        assert styles == [("---", "---"), ("…", "...")]
        assert placed == {"a": "!!!", "b": "???", "c": "!!!", "d": "???"}
        assert credits == {"a": "!!!", "b": "???", "c": "Alpha", "d": "Alpha"}
        assert count == top == 4
    finally:
        queue.close()
        engine.dispose()


def test_punctuation_names_wait_in_separate_review_entries(database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    writer, queue = _writer(engine, tmp_path, trusted=False)
    try:
        source = _source(engine)
        writer.write(source, [_release("a", "One", ["!!!"]), _release("b", "Two", ["???"])])
        waiting = sorted(entry["name"] for entry in queue.entries(kind="artist"))
        assert waiting == ["!!!", "???"]
    finally:
        queue.close()
        engine.dispose()


def test_migration_0013_keys_the_entities_and_releases_that_shared_the_empty_key(database_url: str,
                                                                                   tmp_path: Path) -> None:
    engine = make_engine(database_url)
    writer, queue = _writer(engine, tmp_path, trusted=True)
    try:
        upgrade(engine, "0012")
        source = _source(engine)
        with engine.begin() as conn:  # what the code before 0013 stored: the empty key
            for table, name in (("artists", "!!!"), ("labels", "???"), ("styles", "…")):
                conn.execute(text(f"INSERT INTO {table} (id, name, name_key) VALUES (1, :n, '')"), {"n": name})
            conn.execute(text("INSERT INTO artists (id, name, name_key) VALUES (2, 'Alpha', 'alpha')"))
            for rid, title in ((1, "!!!"), (2, "Plain")):
                conn.execute(text("INSERT INTO releases (id, natural_key, title, year, names_key) "
                                  "VALUES (:id, :k, :t, 2001, :nk)"),
                             {"id": rid, "k": f"shop:{rid}", "t": title,
                              "nk": names_key("" if title == "!!!" else title, 2001, (2,))})
                conn.execute(text("INSERT INTO release_artists (release_id, artist_id, position) VALUES (:r, 2, 0)"),
                             {"r": rid})
            if engine.dialect.name == "postgresql":
                for table in ("artists", "labels", "styles", "releases"):
                    conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                      f"(SELECT max(id) FROM {table}))"))
        upgrade(engine)
        with engine.connect() as conn:
            keys = {table: conn.execute(text(f"SELECT name_key FROM {table} WHERE id = 1")).scalar_one()
                    for table in ("artists", "labels", "styles")}
        assert keys == {"artists": "!!!", "labels": "???", "styles": "..."}
        # the crawl finds the stored release "!!!" by its names (title, year, artists), and a new
        # "???" by the same artist is a release of its own
        writer.write(source, [_release("x", "!!!", ["Alpha"]), _release("y", "???", ["Alpha"]),
                              _release("z", "Plain", ["Alpha"])])
        with engine.connect() as conn:
            placed = dict(conn.execute(text("SELECT external_id, release_id FROM offers")).all())
            count, top = conn.execute(text("SELECT count(*), max(id) FROM releases")).one()
        assert placed == {"x": 1, "y": 3, "z": 2}
        assert count == top == 3
        _downgrade(engine, "0012")
        upgrade(engine)
    finally:
        queue.close()
        engine.dispose()


@pytest.mark.parametrize("together", [False, True])  # decided alone (one by one); with another (the batch path)
def test_a_review_entry_that_held_several_such_names_before_0013_approves_only_its_own(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, together: bool) -> None:
    """Before 0013, "!!!" and "???" waited in one review entry (the empty key, both its spellings).
    Approved after the upgrade, it makes one artist of its own name only; the other name's item goes
    through the gate again and waits for an entry of its own: two artists in the end, each credited."""
    from recordhound.db import entities
    from recordhound.review import gate
    from recordhound.text import clean, fold
    from tests.integration.review_env import open_env

    with open_env(database_url, tmp_path) as env:
        source = env.source()
        with monkeypatch.context() as legacy:  # the matching key as it was: punctuation folded away
            for module in (gate, entities):
                legacy.setattr(module, "name_key", lambda value: fold(clean(value) or ""))
            env.writer().write(source, [_release("a", "One", ["!!!"]), _release("b", "Two", ["???"]),
                                        *([_release("c", "Three", ["Alpha"])] if together else [])])
        entries = env.queue.entries(kind="artist")
        assert sorted(sorted(e["spellings"]) for e in entries) == [["!!!", "???"], *([["Alpha"]] if together else [])]
        for entry in entries:
            env.queue.decide(int(entry["id"]), "approve")
        env.worker().run()
        for waiting in env.queue.entries(kind="artist"):  # the other name, parked again under its own entry
            env.queue.decide(int(waiting["id"]), "approve")
        env.worker().run()
        with env.engine.connect() as conn:
            artists = sorted(conn.execute(text("SELECT name, name_key FROM artists")).all())
            credits = dict(conn.execute(text("SELECT o.external_id, a.name FROM offers o JOIN release_artists ra "
                                             "ON ra.release_id = o.release_id JOIN artists a ON a.id = ra.artist_id")).all())
    assert artists == [("!!!", "!!!"), ("???", "???"), *([("Alpha", "alpha")] if together else [])]
    assert credits == {"a": "!!!", "b": "???", **({"c": "Alpha"} if together else {})}
