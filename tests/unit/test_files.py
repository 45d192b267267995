"""File sources: CSV, XLSX and JSON rows numbered alike, bad rows reported with their number."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.sources.files import BadRow, SourceFileError, columns, count_rows, file_kind, read_rows

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
    unnamed = tmp_path / "feed"  # a profile of kind xlsx reads its file whatever its name (review 4: openpyxl
    unnamed.write_bytes(path.read_bytes())  # refused a path without .xlsx, a traceback)
    assert [row for _, row in read_rows(str(unnamed), "xlsx")] == ROWS
    assert columns(str(unnamed), "xlsx") == ["sku", "title"]


def test_unreadable_files_say_what_and_where(tmp_path: Path) -> None:
    with pytest.raises(SourceFileError, match="no such file"):
        list(read_rows(str(tmp_path / "missing.csv"), "csv"))
    bogus = tmp_path / "bogus.xlsx"
    bogus.write_text("not a spreadsheet")
    with pytest.raises(SourceFileError, match=r"bogus\.xlsx: cannot read it as xlsx"):
        list(read_rows(str(bogus), "xlsx"))


HEAD = "sku,title,artists,price\n"
STRAY = ('1,Tago Mago,Can,29.99\n2,Blue Lines,Massive Attack,19.99\n3,"Heroes,David Bowie,24.99\n'
         '4,Low,David Bowie,22.99\n5,Unknown Pleasures,Joy Division,21.99\n')


def _csv_rows(path: Path, text: str | bytes) -> list[tuple[int, dict[str, str] | BadRow]]:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    rows = list(read_rows(str(path), "csv"))
    assert count_rows(str(path), "csv") == len(rows)
    return rows


def _bad(rows: list[tuple[int, dict[str, str] | BadRow]]) -> dict[int, str]:
    return {line: row.reason for line, row in rows if isinstance(row, BadRow)}


def _skus(rows: list[tuple[int, dict[str, str] | BadRow]]) -> dict[int, str]:
    return {line: row["sku"] for line, row in rows if isinstance(row, dict)}


def test_csv_unclosed_quote_is_one_bad_line_and_the_rows_after_it_still_come(tmp_path: Path) -> None:
    rows = _csv_rows(tmp_path / "feed.csv", HEAD + STRAY)
    assert [line for line, _ in rows] == [1, 2, 3, 4, 5]
    assert _skus(rows) == {1: "1", 2: "2", 4: "4", 5: "5"}
    assert list(_bad(rows)) == [3] and _bad(rows)[3].startswith("unclosed quote")
    assert rows[3][1] == {"sku": "4", "title": "Low", "artists": "David Bowie", "price": "22.99"}


@pytest.mark.parametrize("text, bad", [
    # the last line opens a quote that runs to the end of the file
    (HEAD + '1,Low,Bowie,1\n2,"Heroes,Bowie,2\n', {2}),
    # the quote opened on line 1 is closed by a quote that opens a field on line 3 (not a proper close)
    (HEAD + '1,"Low,Bowie\n2,Heroes,Bowie,2\n3,"Lodger",Bowie,3\n', {1}),
    # the quote opened on line 1 is closed in the middle of a field on line 2
    (HEAD + '1,"Low\n2,Heroes"x,Bowie,2\n3,Lodger,Bowie,3\n', {1}),
])
def test_csv_a_stray_quote_never_swallows_the_rows_after_it(tmp_path: Path, text: str, bad: set[int]) -> None:
    rows = _csv_rows(tmp_path / "feed.csv", text)
    physical = text.count("\n") - 1
    assert [line for line, _ in rows] == list(range(1, physical + 1))
    assert set(_bad(rows)) == bad and all(r.startswith("unclosed quote") for r in _bad(rows).values())
    assert set(_skus(rows)) == set(range(1, physical + 1)) - bad


def test_csv_quoted_fields_that_hold_line_breaks_are_one_row(tmp_path: Path) -> None:
    text = (HEAD + '1,"Tago\nMago",Can,29.99\n'
            '2,"Side A: Mother Sky, Halleluhwah\nSide B: Oh Yeah, ""Bring Me Coffee""\n\nremastered",Can,19.99\n'
            '3,Low,"David\r\nBowie",22.99\n4,"Heroes, live",Bowie,1\n')
    rows = _csv_rows(tmp_path / "feed.csv", text)
    assert _bad(rows) == {}
    assert [(line, row["title"]) for line, row in rows] == [  # type: ignore[index]
        (1, "Tago\nMago"), (2, 'Side A: Mother Sky, Halleluhwah\nSide B: Oh Yeah, "Bring Me Coffee"\n\nremastered'),
        (3, "Low"), (4, "Heroes, live")]
    assert rows[2][1]["artists"] == "David\r\nBowie"  # type: ignore[index]


def test_csv_a_line_that_is_not_utf8_is_a_bad_line(tmp_path: Path) -> None:
    rows = _csv_rows(tmp_path / "feed.csv", b"\xef\xbb\xbf" + HEAD.encode()
                     + b"1,Tago Mago,Can,29.99\n2,Bj\xf6rk,Bj\xf6rk,19.99\n3,Low,David Bowie,22.99\n")
    assert _skus(rows) == {1: "1", 3: "3"}
    assert _bad(rows) == {2: "not UTF-8 at byte 5 of the line (0xf6)"}


def test_csv_a_header_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    path = tmp_path / "feed.csv"
    path.write_bytes(b"sku,t\xeftle\n1,Low\n")
    with pytest.raises(SourceFileError, match=r"header .*not UTF-8 at byte 6"):
        list(read_rows(str(path), "csv"))


def test_json_lines_a_line_that_is_not_utf8_is_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b'{"sku": "A"}\n{"sku": "Caf\xe9"}\n{"sku": "C"}\n')
    rows = list(read_rows(str(path), "json"))
    assert rows[0] == (1, {"sku": "A"}) and rows[2] == (3, {"sku": "C"})
    assert rows[1] == (2, BadRow(2, "not UTF-8 at byte 13 of the line (0xe9)"))
    assert count_rows(str(path), "json") == 3


def test_json_array_an_object_that_is_not_utf8_is_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    path.write_bytes(b'[{"sku": "A"}, {"sku": "Caf\xe9"}, {"sku": "C"}]')
    rows = list(read_rows(str(path), "json"))
    assert rows[0] == (1, {"sku": "A"}) and rows[2] == (3, {"sku": "C"})
    assert isinstance(rows[1][1], BadRow) and rows[1][1].reason.startswith("not UTF-8") and "0xe9" in rows[1][1].reason


REVIEW_FEED = ('sku,title,artists,price,notes\n'
               'X1,Tago Mago,Can,24.99,"Remastered.\nIncludes poster."\n'
               'X2,Ege Bamyasi,Can,22.99,plain\n'
               'X3,Future Days,Can,21.99,"Gatefold sleeve\n180g vinyl"\n'
               'X4,Soon Over Babaluma,Can,19.99,ok\n')


@pytest.mark.parametrize("text", [
    # the reviewer's feed: the multi-line field is the last column, its first line has no comma
    REVIEW_FEED,
    # last column, a line of the field with as many commas as the header has columns, then one without
    'sku,title,notes\n1,Low,"Side A, Side B, bonus\nremastered"\n2,Heroes,ok\n',
    # last column, the quoted field ends on a line of its own
    'sku,title,notes\n1,Low,"remastered\n"\n2,Heroes,ok\n',
    # middle column: the line the field closes on has the header's number of columns
    'sku,notes,artists,price\n1,"Pressing: 180g\nSides: A, B",Can,9.99\n2,plain,Can,8.99\n',
    # middle column: a description with lines that have commas, a line with the header's number of
    # columns among them, a blank line and doubled quotes
    ('sku,notes,artists,price\n1,"Side A: Mother Sky, Halleluhwah\nSide B: Oh Yeah, Bring Me Coffee, Peking O'
     '\n\n""Remastered"", 2004",Can,19.99\n2,plain,Can,8.99\n'),
    # first column, and two multi-line fields in one record
    'notes,sku,price\n"first\nsecond",1,9.99\n"a\nb",2,"9\n.99"\n',
    # CRLF line ends inside and between records
    'sku,title,notes\r\n1,Low,"a\r\nb, c"\r\n2,Heroes,ok\r\n',
])
def test_csv_rfc4180_multiline_records_are_read_as_the_csv_module_reads_them(tmp_path: Path, text: str) -> None:
    rows = _csv_rows(tmp_path / "feed.csv", text)
    records = list(csv.reader(io.StringIO(text, newline="")))
    expected = [(line, dict(zip(records[0], values))) for line, values in enumerate(records[1:], start=1)]
    assert rows == expected  # values and numbering: one row per record, as before broken lines were caught


def test_csv_the_reviewers_feed_stores_every_record(tmp_path: Path) -> None:
    rows = _csv_rows(tmp_path / "feed.csv", REVIEW_FEED)
    assert _bad(rows) == {} and _skus(rows) == {1: "X1", 2: "X2", 3: "X3", 4: "X4"}
    assert rows[0][1]["notes"] == "Remastered.\nIncludes poster."  # type: ignore[index]


@pytest.mark.parametrize("text", [
    # two stray quotes that pair up into a record of the header's width: nothing tells them from a
    # valid field with line breaks (the second review found valid narrow files misread by a guess)
    HEAD + '1,"Low,Bowie,1\n2,Heroes",Bowie,2\n3,Lodger,Bowie,3\n',
    'sku,title,notes\n1,Low,"remastered\n2,Heroes,ok"\n3,Lodger,ok\n',
    # valid: a narrow file whose notes' second line has as many commas as a row
    'sku,title,description\nLP-001,Kind of Blue,"Classic reissue.\n180g, gatefold, remastered."\n'
    'LP-002,Blue Train,ok\n',
])
def test_csv_a_record_of_the_headers_width_is_read_as_the_csv_module_reads_it(tmp_path: Path, text: str) -> None:
    rows = _csv_rows(tmp_path / "feed.csv", text)
    expected = list(csv.reader(io.StringIO(text)))[1:]
    assert [list(row.values()) for _, row in rows if isinstance(row, dict)] == expected and _bad(rows) == {}


def test_csv_row_numbers_of_a_valid_file_are_the_csv_modules(tmp_path: Path) -> None:
    """An import interrupted before broken lines were caught resumes at its last_parsed_line: a valid
    file's rows must keep the numbers csv.reader gave them (one per record, however many lines)."""
    text = REVIEW_FEED + 'X5,Landed,Can,18.99,"one\ntwo\nthree, four, five, six"\nX6,Flow Motion,Can,17.99,ok\n'
    rows = _csv_rows(tmp_path / "feed.csv", text)
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader)
    assert [(line, row["sku"]) for line, row in rows] == [  # type: ignore[index]
        (line, values[0]) for line, values in enumerate(reader, start=1)]


def test_csv_a_quote_never_closed_holds_at_most_record_lines_of_the_file() -> None:
    """A stray quote in a file of 50,000 lines: the reader gives its line up as a bad row after taking at most
    ``RECORD_LINES`` more (before: the rest of the file, held in memory, twice with the count), and the lines
    taken are read again as rows."""
    from recordhound.sources.files import RECORD_LINES, UNCLOSED, _records

    taken = 0

    def lines() -> Iterator[str]:
        nonlocal taken
        yield '1,"Heroes,Bowie\n'
        for n in range(2, 50_001):
            taken += 1
            yield f"{n},Low,Bowie\n"

    records = _records(lines(), 3)
    assert next(records) == UNCLOSED
    assert taken <= RECORD_LINES
    assert next(records) == ["2", "Low", "Bowie"] and sum(1 for _ in records) == 49_998
