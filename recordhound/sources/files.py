"""Read CSV, XLSX and JSON (JSON Lines or one array) sources row by row, numbered from 1.

Row numbers count data rows (the header row is not one), so "line 4523" is the same position
in the CSV, the XLSX and the JSON export of one catalog. A row that cannot be read comes out
as a :class:`BadRow` with its number and the reason; the rows after it still come.

Text files are UTF-8 (a byte order mark is allowed). A row with bytes that are not comes out as
a bad row ("not UTF-8 at byte N of the line"); the other rows are read as usual.

A CSV row is one physical line, unless a quoted field holds a line break: then it is read as the
csv module reads it (RFC 4180) and numbered once, as csv.reader numbers it. A row that runs past its
first line is refused if its quoted field does not close properly (never, or without a comma or the
end of a line after the closing quote) or if it has other than the header's number of columns. A
refused row's first line is a bad row ("unclosed quote") and reading goes on from the next line, so a
quote that an export forgot to close does not swallow the rows after it. Two stray quotes that pair up
into a row of the header's width are read as the csv module reads them: nothing tells them from a valid
field with line breaks, and a valid file is always read as it was written.
"""

from __future__ import annotations

import csv
import json
import zipfile
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from recordhound.exceptions import RecordhoundError
from recordhound.sources.profile import FILE_KINDS


class SourceFileError(RecordhoundError):
    """The file itself cannot be read (missing, not a spreadsheet, not JSON)."""


@dataclass(frozen=True)
class BadRow:
    line: int
    reason: str


Row = tuple[int, dict[str, Any] | BadRow]
UNCLOSED = ("unclosed quote: the quoted field that opens on this line does not close on it; "
            "the lines after it are read as rows of their own")
_START, _FIELD, _QUOTED, _CLOSING = range(4)  # where the CSV parser is: see _scan
UNREADABLE = (OSError, UnicodeDecodeError, csv.Error, ValueError, KeyError, zipfile.BadZipFile)  # a file's errors
FIELD_CHARS = 16 * 2**20  # the longest CSV field read (the csv module's default: 131,072 characters)
# A quoted field open for more lines or characters than these is a quote never closed: memory stays bounded,
# and its lines are read again as rows (a real field that long is read wrong; a stray quote is the likelier).
RECORD_LINES, RECORD_CHARS = 10_000, FIELD_CHARS


def file_kind(path: str, declared: str) -> str:
    """The reader a file needs: by its extension, else the profile's kind."""
    suffix = Path(path).suffix.lower().lstrip(".")
    return {"csv": "csv", "xlsx": "xlsx", "json": "json", "jsonl": "json", "ndjson": "json"}.get(suffix, declared)


def read_rows(path: str, kind: str) -> Iterator[Row]:
    if kind not in FILE_KINDS:
        raise SourceFileError(f"{path}: cannot read a {kind!r} source as a file")
    if not Path(path).is_file():
        raise SourceFileError(f"{path}: no such file")
    try:
        yield from {"csv": _csv, "xlsx": _xlsx, "json": _json}[kind](path)
    except UNREADABLE as exc:
        raise SourceFileError(f"{path}: cannot read it as {kind}: {exc}") from exc


def count_rows(path: str, kind: str) -> int:
    return sum(1 for _ in read_rows(path, kind))


def _text(path: str) -> IO[str]:
    """The file as UTF-8 text in which a byte that is not UTF-8 stays as a lone surrogate (see
    :func:`_not_utf8`); line ends are kept as they are (``\\r\\n`` in a quoted CSV field is data)."""
    return open(path, newline="", encoding="utf-8-sig", errors="surrogateescape")


def _not_utf8(text: str) -> tuple[int, str] | None:
    """Where ``text`` (read by :func:`_text`) stops being UTF-8: (byte position from 1, what is there)."""
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError as exc:
        char = ord(text[exc.start])
        what = f"0x{char - 0xDC00:02x}" if 0xDC80 <= char <= 0xDCFF else f"U+{char:04X}, half of a UTF-16 pair"
        return len(text[:exc.start].encode("utf-8")) + 1, what


def _line_not_utf8(text: str) -> str | None:
    found = _not_utf8(text)
    return None if found is None else f"not UTF-8 at byte {found[0]} of the line ({found[1]})"


def columns(path: str, kind: str) -> list[str] | None:
    """A CSV's or a spreadsheet's column names, from its header (None: JSON, whose objects name their own)."""
    if kind == "json":
        return None
    try:
        if kind == "csv":
            with _text(path) as handle:
                return _csv_header(path, iter(handle))
        with _workbook(path) as book:
            return _xlsx_header(book.worksheets[0].iter_rows(values_only=True))
    except UNREADABLE as exc:
        raise SourceFileError(f"{path}: cannot read it as {kind}: {exc}") from exc


def _csv_header(path: str, lines: Iterator[str]) -> list[str]:
    first = next(lines, "")
    if problem := _line_not_utf8(first):
        raise SourceFileError(f"{path}: the header line is {problem}; save the file as UTF-8")
    return next(csv.reader([first]), [])


def _csv(path: str) -> Iterator[Row]:
    csv.field_size_limit(max(csv.field_size_limit(), FIELD_CHARS))
    with _text(path) as handle:
        lines = iter(handle)
        header = _csv_header(path, lines)
        for line, record in enumerate(_records(lines, len(header)), start=1):
            if isinstance(record, str):
                yield line, BadRow(line, record)
            elif len(record) != len(header):
                yield line, BadRow(line, f"{len(record)} columns where the header has {len(header)}")
            else:
                yield line, dict(zip(header, record))


def _records(lines: Iterator[str], width: int) -> Iterator[list[str] | str]:
    """The CSV records in ``lines``: each one's values, or why it cannot be read."""
    ahead: deque[str] = deque()  # lines taken for a record that was not one: read again, as rows

    def take() -> str | None:
        return ahead.popleft() if ahead else next(lines, None)

    while (first := take()) is not None:
        try:
            taken, values = _record(first, take, width)
        except csv.Error as exc:  # (a field longer than FIELD_CHARS): this record's error, not the file's
            yield f"cannot read it as CSV: {exc}"
            continue
        if values is None:
            ahead.extendleft(reversed(taken[1:]))
            yield UNCLOSED
        else:
            yield _line_not_utf8("".join(taken)) or values


def _record(first: str, take: Callable[[], str | None], width: int) -> tuple[list[str], list[str] | None]:
    """The physical lines of the record that starts with ``first``, and its values (None: not a record).

    A record over several lines is read as the csv module reads it, and refused only for one of these:
    its quoted field never closes, or closes with something other than a comma or a line end after it,
    or it has other than the header's number of columns. (Two stray quotes that pair up into a record of
    the header's width cannot be told from a valid field with line breaks: read as the csv module does.)"""
    values = _parse([first])
    if not _open(values):
        return [first], values
    taken, closed_badly, chars = [first], False, len(first)
    while (more := take()) is not None:
        taken.append(more)
        chars += len(more)
        if len(taken) > RECORD_LINES or chars > RECORD_CHARS:
            return taken, None
        state, badly = _scan(more)
        closed_badly = closed_badly or badly
        if state != _QUOTED:
            values = _parse(taken)
            return (taken, None) if closed_badly or len(values) != width else (taken, values)
    return taken, None  # open to the end of the file


def _parse(lines: list[str], quoting: Literal[0, 1, 2, 3] = csv.QUOTE_MINIMAL) -> list[str]:
    """The first record in ``lines`` (the last one ended by a line break if it has none)."""
    if not lines[-1].endswith(("\n", "\r")):
        lines = [*lines[:-1], lines[-1] + "\n"]
    return next(csv.reader(lines, quoting=quoting), [])


def _open(values: list[str]) -> bool:
    """Whether a line parsed alone ends inside a quoted field: its last value holds the line's break."""
    return bool(values) and values[-1].endswith(("\n", "\r"))


def _scan(text: str) -> tuple[int, bool]:
    """Where the CSV parser (the excel dialect, not strict) is after ``text`` read inside a quoted field,
    and whether a quote closed a quoted field with something other than a comma or a line end after it."""
    state, closed_badly = _QUOTED, False
    if '"' not in text:
        return state, closed_badly
    for char in text:
        if state == _QUOTED:
            state = _CLOSING if char == '"' else _QUOTED
        elif state == _CLOSING and char == '"':
            state = _QUOTED  # a doubled quote
        elif char in ",\r\n":
            state = _START
        elif state == _CLOSING:
            state, closed_badly = _FIELD, True
        elif state == _START:
            state = _QUOTED if char == '"' else _FIELD
    return state, closed_badly


def _xlsx(path: str) -> Iterator[Row]:
    with _workbook(path) as book:
        rows = book.worksheets[0].iter_rows(values_only=True)
        header = _xlsx_header(rows)
        for line, values in enumerate(rows, start=1):
            if all(v is None for v in values):
                yield line, BadRow(line, "empty row")
                continue
            yield line, {h: ("" if v is None else str(v)) for h, v in zip(header, values)}


@contextmanager
def _workbook(path: str) -> Iterator[Any]:
    """The workbook read by its content, whatever the file's name (openpyxl refuses a path that does not end in
    .xlsx: a profile's ``feed`` file of kind xlsx)."""
    from openpyxl import load_workbook

    with open(path, "rb") as handle:
        book = load_workbook(handle, read_only=True, data_only=True)
        try:
            yield book
        finally:
            book.close()


def _xlsx_header(rows: Iterator[tuple[Any, ...]]) -> list[str]:
    return [str(h) if h is not None else "" for h in next(rows, ())]


def _json(path: str) -> Iterator[Row]:
    with _text(path) as handle:
        first = handle.read(1)
        while first and first.isspace():
            first = handle.read(1)
        handle.seek(0)
        if first == "[":
            yield from _json_array(handle.read())
            return
        for line, text in enumerate(handle, start=1):
            if problem := _line_not_utf8(text):
                yield line, BadRow(line, problem)
                continue
            try:
                yield line, _object(line, json.loads(text))
            except json.JSONDecodeError as exc:
                yield line, BadRow(line, f"not JSON: {exc}")


def _json_array(text: str) -> Iterator[Row]:
    """One JSON array's objects; with bytes in the file that are not UTF-8, the objects that hold them are bad."""
    clean = _not_utf8(text) is None
    for line, value in enumerate(json.loads(text), start=1):
        found = None if clean else _not_utf8(json.dumps(value, ensure_ascii=False))
        yield line, _object(line, value) if found is None else BadRow(line, f"not UTF-8 ({found[1]})")


def _object(line: int, value: Any) -> dict[str, Any] | BadRow:
    if not isinstance(value, dict):
        return BadRow(line, f"expected an object, got {type(value).__name__}")
    # (a list or an object stays one: the importer refuses it where one value is expected)
    return {k: v if isinstance(v, (list, dict)) or v is None else str(v) for k, v in value.items()}
