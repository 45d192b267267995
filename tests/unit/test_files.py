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
    # two stray quotes pair up across whole rows: the quote on line 2 is closed on line 5
    (HEAD + '1,"Low,Bowie,1\n2,Heroes,Bowie,2\n3,Lodger,Bowie,3\n4,Scary",Bowie,4\n5,Station,Bowie,5\n', {1}),
    # two stray quotes on neighbouring lines
    (HEAD + '1,"Low,Bowie,1\n2,Heroes",Bowie,2\n3,Lodger,Bowie,3\n', {1}),
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
