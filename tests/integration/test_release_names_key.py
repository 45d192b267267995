"""Matching's last step by ``releases.names_key`` (migration 0012): a release with no known barcode
or catalogue number is found by its exact title, year and ordered artists, including the releases
stored before the migration (which keys them)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import Engine, inspect, text

from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.db.engine import make_engine
from recordhound.db.migrate import upgrade
from recordhound.items import Release
from recordhound.review.docstore import SqliteDocStore
from recordhound.review.queue import ReviewQueue
from recordhound.text import name_key
from tests.integration.test_source_spellings import _downgrade

ARTISTS = {1: "Alpha", 2: "Beta"}
STORED = [  # id, title, year, artist ids in order: written before the migration, by SQL
    (1, "Greatest Hits", 1990, (2, 1)),
    (2, "Greatest Hits", None, (1,)),
    (3, "Ünïcode — “Quoted” Title", 2001, (1,)),
    (4, "Greatest Hits", 1991, (1, 2)),
]


def _seed(engine: Engine) -> None:
    with engine.begin() as conn:
        for aid, name in ARTISTS.items():
            conn.execute(text("INSERT INTO artists (id, name, name_key) VALUES (:id, :n, :k)"),
                         {"id": aid, "n": name, "k": name_key(name)})
        conn.execute(text("INSERT INTO sources (id, name, kind, location, metadata) VALUES "
                          "(1, 'first', 'html', 'http://first/', '{}'), (2, 'second', 'html', 'http://second/', '{}')"))
        for rid, title, year, artists in STORED:
            conn.execute(text("INSERT INTO releases (id, natural_key, title, year) VALUES (:id, :key, :t, :y)"),
                         {"id": rid, "key": f"first:{rid}", "t": title, "y": year})
            for position, aid in enumerate(artists):
                conn.execute(text("INSERT INTO release_artists (release_id, artist_id, position) VALUES (:r, :a, :p)"),
                             {"r": rid, "a": aid, "p": position})
            conn.execute(text("INSERT INTO offers (source_id, external_id, url, release_id, first_seen, last_seen) VALUES "
                              "(1, :sku, :url, :r, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"),
                         {"sku": f"f{rid}", "url": f"http://first/{rid}", "r": rid})
        if engine.dialect.name == "postgresql":
            for table in ("artists", "sources", "releases", "offers"):
                conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"))


def _item(sku: str, title: str, year: int | None, artists: list[str]) -> Release:
    return Release("second", f"http://second/{sku}", sku, title, artists, year=year, price=None)


def test_releases_stored_before_0012_are_found_by_title_year_and_artists(database_url: str, tmp_path: Path) -> None:
    engine = make_engine(database_url)
    queue = ReviewQueue(SqliteDocStore(str(tmp_path / "review.sqlite3")))
    try:
        upgrade(engine, "0011")
        _seed(engine)
        upgrade(engine)
        writer = CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100))
        writer.write(2, [
            _item("s1", "Greatest Hits", 1990, ["Beta", "Alpha"]),  # release 1
            _item("s2", "Greatest Hits", None, ["Alpha"]),  # release 2 (undated)
            _item("s3", "Ünïcode — “Quoted” Title", 2001, ["Alpha"]),  # release 3
            _item("s4", "Greatest Hits", 1990, ["Alpha", "Beta"]),  # other order: a new release
            _item("s5", "Greatest Hits", 1992, ["Alpha", "Beta"]),  # other year: a new release
            _item("s7", "GREATEST HITS!", 1991, ["Alpha", "Beta"]),  # the title's matching key: release 4
        ])
        with engine.connect() as conn:
            placed = dict(conn.execute(text("SELECT external_id, release_id FROM offers WHERE source_id = 2")).all())
            count, top = conn.execute(text("SELECT count(*), max(id) FROM releases")).one()
        assert placed == {"s1": 1, "s2": 2, "s3": 3, "s4": 5, "s5": 6, "s7": 4}
        assert count == top == 6
        writer.write(2, [_item("s6", "Greatest Hits", 1992, ["Alpha", "Beta"])])  # the release the writer made
        with engine.connect() as conn:
            assert conn.execute(text("SELECT release_id FROM offers WHERE external_id = 's6'")).scalar_one() == 6
        # a release found by its catalogue number is updated by the shop that owns it: renamed,
        # a year and an artist added; its names_key follows, so the names find it
        def numbered(title: str, year: int | None, artists: list[str]) -> Release:
            return Release("first", "http://first/n", "fn", title, artists, "Lbl", "L-1", year)

        writer.write(1, [numbered("Before", None, ["Alpha"])])
        writer.write(1, [numbered("After", 2000, ["Alpha", "Beta"])])
        writer.write(2, [_item("s8", "After", 2000, ["Alpha", "Beta"])])
        writer.write(2, [_item("s9", "Before", None, ["Alpha"])])  # (alone: rows one key finds serve all)
        with engine.connect() as conn:
            placed = dict(conn.execute(text("SELECT external_id, release_id FROM offers "
                                            "WHERE external_id IN ('fn', 's8', 's9')")).all())
            assert conn.execute(text("SELECT title, year FROM releases WHERE id = 7")).one() == ("After", 2000)
        assert placed == {"fn": 7, "s8": 7, "s9": 8}
        _downgrade(engine, "0011")
        assert "names_key" not in {c["name"] for c in inspect(engine).get_columns("releases")}
        upgrade(engine)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM releases WHERE names_key IS NULL")).scalar_one() == 0
    finally:
        queue.close()
        engine.dispose()
