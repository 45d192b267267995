"""`recordhound import` of rows whose values cannot be used: a list where one value is expected, a lone
surrogate escape (valid JSON, not UTF-8 text), a title longer than the releases table holds, a null among
an artist list. Each such row is one line error with its number, counted as rejected; every other row of
the file lands once, and the import completes (exit 0). Before, the first two ended the import with a
traceback at that line on every resume (nothing after it was ever imported), and the writer's refusals
were neither counted nor recorded. Re-imported and killed after its first batch, then resumed: the counts
are the file's, not twice. SQLite + embedded queue, PostgreSQL + Redis queue."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

from tests.integration.dbcheck import ProductDb
from tests.integration.review_env import ReviewEnv
from tests.integration.test_file_import_broken_lines import CSV, CSV_STORED, _assert_errors, _import, _outcome, env

__all__ = ["env"]  # (the fixture)

ROWS = [
    {"sku": "1", "title": "Tago Mago", "artists": "Can", "price": "29.99"},
    {"sku": "2", "title": "Blue Lines", "artists": "Massive Attack", "price": ["19.99"]},  # one price, two given
    {"sku": "3", "title": "Low", "artists": "David Bowie", "price": "22.99"},
    "LONE_SURROGATE",
    {"sku": "5", "title": "Future Days", "artists": ["Can", None, ""], "price": "21.99"},  # a null among names
    {"sku": {"id": "6"}, "title": "Closer", "artists": "Joy Division", "price": "20.99"},  # an object as the SKU
    {"sku": "7", "title": "x" * 400, "artists": "Joy Division", "price": "20.99"},  # longer than titles are
    {"sku": "8", "title": "Unknown Pleasures", "artists": "Joy Division", "price": "21.99"},
]
SURROGATE_LINE = '{"sku": "4", "title": "Bj\\ud800rk", "artists": "Bjork", "price": "18.99"}'  # valid JSON
STORED = ["1", "3", "5", "8"]
ERRORS = {2: "price: a list where one value is expected", 4: "title: not UTF-8 text",
          6: "external_id: an object where one value is expected", 7: "title is"}


def test_rows_with_values_that_cannot_be_used_are_line_errors_and_the_rest_is_imported(
        env: ReviewEnv, tmp_path: Path) -> None:
    feed = tmp_path / "catalog.jsonl"
    feed.write_text("".join((SURROGATE_LINE if row == "LONE_SURROGATE" else json.dumps(row)) + "\n" for row in ROWS))
    said = _import(env, tmp_path, feed)
    skus, meta = _outcome(env)
    assert skus == STORED, said[-3000:]
    assert meta["status"] == "completed" and meta["last_parsed_line"] == len(ROWS), meta
    _assert_errors(meta, ERRORS)
    assert meta["counts"]["stored"] == len(STORED) and meta["counts"]["rejected"] == len(ERRORS), meta["counts"]
    for line in ERRORS:
        assert f"catalog.jsonl line {line}: " in said, said[-3000:]
    db = ProductDb(env.database_url)
    try:
        assert sorted(name for (name,) in db.rows("SELECT name FROM artists")) == ["Can", "David Bowie",
                                                                                   "Joy Division"]
        assert db.scalar("SELECT count(*) FROM release_artists ra JOIN releases r ON r.id = ra.release_id "
                         "WHERE r.title = 'Future Days'") == 1
    finally:
        db.close()


def test_a_re_import_killed_after_its_first_batch_counts_the_file_once(env: ReviewEnv, tmp_path: Path) -> None:
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(CSV)
    _import(env, tmp_path, feed)
    _import(env, tmp_path, feed, "--restart", failpoints="import.after_commit=kill@1")
    _import(env, tmp_path, feed)
    skus, meta = _outcome(env)
    assert skus == sorted(CSV_STORED) and meta["status"] == "completed"
    assert meta["counts"]["stored"] == len(CSV_STORED), meta["counts"]


def test_a_csv_without_the_profile_s_id_and_title_columns_is_one_line_before_any_row(
        env: ReviewEnv, tmp_path: Path) -> None:
    """Separated by ``;``: one column, ``sku;title;artists;price``. Before, every row was rejected one by one,
    exit 0."""
    feed = tmp_path / "catalog.csv"
    feed.write_bytes(CSV.replace(b",", b";"))
    said = _import(env, tmp_path, feed, code=2)
    errors = [line for line in said.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the header has no column 'sku', 'title'" in errors[0], said[-3000:]
    assert "is it separated by ';'?" in errors[0] and "Traceback" not in said, said[-3000:]
    skus, _ = _outcome(env)
    assert skus == []


def test_a_spreadsheet_whose_first_row_is_short_is_read_by_its_header(env: ReviewEnv, tmp_path: Path) -> None:
    """A sheet written without its ``<dimension>`` (as some exporters do): openpyxl does not pad its rows, so a
    first row without a title has no title key. The header check reads the header row (review 3: the check,
    reading the first row's keys, refused the whole file)."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["sku", "artists", "price", "title"])
    sheet.append(["a1", "Can", "19.99"])  # no title: this row's error
    sheet.append(["a2", "Can", "21.99", "Future Days"])
    book.save(tmp_path / "with.xlsx")
    feed = tmp_path / "catalog.xlsx"
    with zipfile.ZipFile(tmp_path / "with.xlsx") as source, zipfile.ZipFile(feed, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            target.writestr(item, re.sub(rb"<dimension[^>]*/>", b"", data) if "worksheets/" in item.filename
                            else data)
    assert b"<dimension" not in zipfile.ZipFile(feed).read("xl/worksheets/sheet1.xml")
    _import(env, tmp_path, feed)
    skus, meta = _outcome(env)
    assert skus == ["a2"] and meta["status"] == "completed"
    _assert_errors(meta, {1: "required field(s) missing: title"})
