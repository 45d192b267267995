"""`recordhound import` of feeds with broken lines: a CSV quote that is never closed, a line that is
not UTF-8 (CSV and JSON Lines), next to a quoted field that legitimately holds a line break. Every
readable line lands in the product DB once, each broken line is one line error with its number and
reason, ``total_lines`` counts every line; killed mid-file, resumed, then ``--restart``: nothing twice
(SQLite + embedded queue, PostgreSQL + Redis queue)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.dbcheck import ProductDb
from tests.integration.review_env import ReviewEnv, open_env

CSV = (b"sku,title,artists,price\n"
       b"1,Tago Mago,Can,29.99\n"
       b"2,Blue Lines,Massive Attack,19.99\n"
       b'3,"Heroes,David Bowie,24.99\n'                  # the quote is never closed
       b"4,Low,David Bowie,22.99\n"
       b'5,"Future Days\nremastered",Can,21.99\n'       # a line break inside a quoted field: one row
       b"6,Bj\xf6rk,Bj\xf6rk,18.99\n"                    # Latin-1, not UTF-8
       b"7,Unknown Pleasures,Joy Division,21.99\n"
       b"8,Closer,Joy Division,20.99\n")
CSV_STORED = {"1", "2", "4", "5", "7", "8"}
CSV_ERRORS = {3: "unclosed quote", 6: "not UTF-8 at byte 5 of the line (0xf6)"}
JSONL = (b'{"sku": "1", "title": "Tago Mago", "artists": "Can", "price": "29.99"}\n'
         b'{"sku": "2", "title": "Bj\xf6rk", "artists": "Bj\xf6rk", "price": "18.99"}\n'
         b'{"sku": "3", "title": "Low", "artists": "David Bowie", "price": "22.99"}\n')


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> Iterator[ReviewEnv]:
    with open_env(database_url, tmp_path) as opened:
        yield opened


def _import(env: ReviewEnv, tmp_path: Path, feed: Path, *args: str, failpoints: str = "", code: int = 0) -> str:
    profile = tmp_path / "feed.yaml"
    profile.write_text(yaml.safe_dump({"name": "feed", "kind": "csv", "fields": {
        "external_id": "sku", "title": "title", "artists": "artists", "price": "price"},
        "price": {"default_currency": "EUR"}}))
    command = [sys.executable, "-m", "recordhound", "import", str(profile), "--file", str(feed), "--batch-size", "2",
               "-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true", *args]
    for setting in env.settings():
        command += ["-s", setting]
    process_env = {**os.environ, "DATABASE_URL": env.database_url, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
                   "RECORDHOUND_FAILPOINTS": failpoints}
    done = subprocess.run(command, cwd=tmp_path, env=process_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == (-signal.SIGKILL if failpoints else code), done.stderr[-3000:]
    return done.stderr


def _outcome(env: ReviewEnv) -> tuple[list[str], dict[str, Any]]:
    """The stored offers' SKUs (one entry per row: a double shows twice) and the source's metadata."""
    db = ProductDb(env.database_url)
    try:
        skus = sorted(sku for (sku,) in db.rows("SELECT external_id FROM offers"))
        assert db.scalar("SELECT count(*) FROM releases") == len(skus)
        return skus, db.source_meta("feed")
    finally:
        db.close()


def _assert_errors(meta: dict[str, Any], expected: dict[int, str]) -> None:
    assert [e["line"] for e in meta["line_errors"]] == list(expected)  # each once, in order
    for error in meta["line_errors"]:
        assert error["reason"].startswith(expected[error["line"]]), error


def test_csv_broken_lines_are_line_errors_and_the_rest_is_imported(env: ReviewEnv, tmp_path: Path) -> None:
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(CSV)
    _import(env, tmp_path, feed)
    skus, meta = _outcome(env)
    assert skus == sorted(CSV_STORED)
    assert meta["status"] == "completed" and meta["total_lines"] == 8 and meta["last_parsed_line"] == 8
    _assert_errors(meta, CSV_ERRORS)
    db = ProductDb(env.database_url)
    try:
        title = db.scalar("SELECT r.title FROM releases r JOIN offers o ON o.release_id = r.id "
                          "WHERE o.external_id = '5'")
    finally:
        db.close()
    assert "Future Days" in title and "remastered" in title


def test_json_lines_a_line_that_is_not_utf8_is_a_line_error(env: ReviewEnv, tmp_path: Path) -> None:
    feed = tmp_path / "catalog.jsonl"
    feed.write_bytes(JSONL)
    _import(env, tmp_path, feed)
    skus, meta = _outcome(env)
    assert skus == ["1", "3"]
    assert meta["status"] == "completed" and meta["total_lines"] == 3 and meta["last_parsed_line"] == 3
    _assert_errors(meta, {2: "not UTF-8 at byte 26 of the line (0xf6)"})


def test_killed_mid_file_resumed_then_restarted_lands_each_line_once(env: ReviewEnv, tmp_path: Path) -> None:
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(CSV)
    _import(env, tmp_path, feed, failpoints="import.after_commit=kill@2")  # lines 4-5 committed, progress at 2
    skus, meta = _outcome(env)
    assert skus == ["1", "2", "4", "5"] and meta["last_parsed_line"] == 2 and meta["total_lines"] == 8
    assert "Resuming" in _import(env, tmp_path, feed)
    skus, meta = _outcome(env)
    assert skus == sorted(CSV_STORED) and meta["status"] == "completed" and meta["last_parsed_line"] == 8
    _assert_errors(meta, CSV_ERRORS)
    _import(env, tmp_path, feed, "--restart")
    skus, meta = _outcome(env)
    assert skus == sorted(CSV_STORED) and meta["status"] == "completed"
    _assert_errors(meta, CSV_ERRORS)


def test_csv_a_multiline_last_column_is_one_row_and_stored(env: ReviewEnv, tmp_path: Path) -> None:
    """RFC 4180: a quoted last column over two lines whose first line has no comma (so that line alone,
    its quote read as a plain character, has the header's number of columns) is one row, stored."""
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(b'sku,title,artists,price,notes\n'
                     b'1,Tago Mago,Can,24.99,"Remastered.\nIncludes poster."\n'
                     b'2,Ege Bamyasi,Can,22.99,plain\n'
                     b'3,Future Days,Can,21.99,"Gatefold sleeve\n180g vinyl"\n'
                     b'4,Soon Over Babaluma,Can,19.99,ok\n')
    _import(env, tmp_path, feed)
    skus, meta = _outcome(env)
    assert skus == ["1", "2", "3", "4"]
    assert meta["status"] == "completed" and meta["total_lines"] == 4 and meta["last_parsed_line"] == 4
    assert meta["line_errors"] == []


def test_a_file_replaced_after_a_kill_is_imported_from_its_first_line(env: ReviewEnv, tmp_path: Path) -> None:
    """Killed at line 2, the feed at the same path replaced by a newer one with new rows at its top: the resume
    reads the new file from line 1 (before: from line 3 of the new file, its first rows never imported)."""
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(CSV)
    _import(env, tmp_path, feed, failpoints="import.after_commit=kill@2")
    newer = CSV.replace(b"sku,title,artists,price\n", b"sku,title,artists,price\n"
                        b"N1,Monster Movie,Can,27.99\nN2,Flow Motion,Can,23.99\nN3,Saw Delight,Can,19.99\n")
    feed.write_bytes(newer)
    said = _import(env, tmp_path, feed)
    assert "changed since its import stopped at line 2" in said, said[-3000:]
    skus, meta = _outcome(env)
    assert skus == sorted(CSV_STORED | {"N1", "N2", "N3"}) and meta["status"] == "completed", skus
    assert meta["total_lines"] == 11 and meta["last_parsed_line"] == 11
    _assert_errors(meta, {line + 3: reason for line, reason in CSV_ERRORS.items()})


def test_a_huge_field_is_read_and_a_quote_open_for_a_thousand_lines_is_a_line_error(
        env: ReviewEnv, tmp_path: Path) -> None:
    """A 200,000-character field (the csv module's limit is 131,072: before, the whole file failed, nothing
    imported), and a stray quote closed 1,200 lines later (before, that record's 1,200 lines were held, and
    failed the file at the field limit): row 2 is stored, row 3 is a line error, the 1,200 rows after it and
    the one that closes the quote's field are read as rows."""
    filler = [f"F{n},Filler {n},Can,10.00,ok\n".encode() for n in range(1, 1201)]
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(b"sku,title,artists,price,notes\n1,Tago Mago,Can,29.99,plain\n"
                     b'2,Blue Lines,Massive Attack,19.99,"' + b"x" * 200_000 + b'"\n'
                     b'3,"Heroes,David Bowie,24.99,stray\n' + b"".join(filler) +
                     b'4,Low,David Bowie,22.99,"closes the stray quote"\n')
    _import(env, tmp_path, feed, "--batch-size", "500")
    skus, meta = _outcome(env)
    assert skus == sorted(["1", "2", "4", *(f"F{n}" for n in range(1, 1201))])
    assert meta["status"] == "completed" and meta["total_lines"] == 1204 and meta["last_parsed_line"] == 1204
    _assert_errors(meta, {3: "unclosed quote"})
