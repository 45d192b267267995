"""File sources: CSV, XLSX and JSON rows numbered alike, bad rows reported with their number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recordhound.sources.files import BadRow, SourceFileError, count_rows, file_kind, read_rows

ROWS = [{"sku": "A", "title": "One"}, {"sku": "B", "title": "Two"}, {"sku": "C", "title": "Three"}]


def test_csv_rows_and_a_row_with_the_wrong_number_of_columns(tmp_path: Path) -> None:
    path = tmp_path / "feed.csv"
    path.write_text("sku,title\nA,One\nB,Two,extra\nC,Three\n", encoding="utf-8")
    rows = list(read_rows(str(path), "csv"))
    assert rows[0] == (1, ROWS[0]) and rows[2] == (3, ROWS[2])
    assert isinstance(rows[1][1], BadRow) and "3 columns where the header has 2" in rows[1][1].reason


def test_json_lines_and_json_array_number_rows_the_same(tmp_path: Path) -> None:
    lines = tmp_path / "feed.jsonl"
    lines.write_text(json.dumps(ROWS[0]) + "\n{broken\n" + json.dumps(ROWS[2]) + "\n", encoding="utf-8")
    array = tmp_path / "feed.json"
    array.write_text(json.dumps([ROWS[0], "not an object", ROWS[2]]), encoding="utf-8")
    for path in (lines, array):
        rows = list(read_rows(str(path), file_kind(str(path), "json")))
        assert [line for line, _ in rows] == [1, 2, 3]
        assert rows[0][1] == ROWS[0] and rows[2][1] == ROWS[2]
        assert isinstance(rows[1][1], BadRow) and rows[1][1].line == 2


def test_xlsx_rows_and_counts(tmp_path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("catalog")
    sheet.append(["sku", "title"])
    for row in ROWS:
        sheet.append([row["sku"], row["title"]])
    path = tmp_path / "feed.xlsx"
    book.save(path)
    assert [row for _, row in read_rows(str(path), "xlsx")] == ROWS
    assert count_rows(str(path), "xlsx") == 3


def test_unreadable_files_say_what_and_where(tmp_path: Path) -> None:
    with pytest.raises(SourceFileError, match="no such file"):
        list(read_rows(str(tmp_path / "missing.csv"), "csv"))
    bogus = tmp_path / "bogus.xlsx"
    bogus.write_text("not a spreadsheet")
    with pytest.raises(SourceFileError, match=r"bogus\.xlsx: cannot read it as xlsx"):
        list(read_rows(str(bogus), "xlsx"))
