"""Read CSV, XLSX and JSON (JSON Lines or one array) sources row by row, numbered from 1.

Row numbers count data rows (the header row is not one), so "line 4523" is the same position
in the CSV, the XLSX and the JSON export of one catalog. A row that cannot be read comes out
as a :class:`BadRow` with its number and the reason; the rows after it still come.
"""

from __future__ import annotations

import csv
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recordhound.exceptions import RecordhoundError
from recordhound.sources.profile import FILE_KINDS


class SourceFileError(RecordhoundError):
    """The file itself cannot be read (missing, not a spreadsheet, not JSON)."""


@dataclass(frozen=True)
class BadRow:
    line: int
    reason: str


Row = tuple[int, dict[str, Any] | BadRow]


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
    except (OSError, UnicodeDecodeError, csv.Error, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise SourceFileError(f"{path}: cannot read it as {kind}: {exc}") from exc


def count_rows(path: str, kind: str) -> int:
    return sum(1 for _ in read_rows(path, kind))


def _csv(path: str) -> Iterator[Row]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, None) or []
        for line, values in enumerate(reader, start=1):
            if len(values) != len(header):
                yield line, BadRow(line, f"{len(values)} columns where the header has {len(header)}")
                continue
            yield line, dict(zip(header, values))


def _xlsx(path: str) -> Iterator[Row]:
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=True)
    try:
        rows = book.worksheets[0].iter_rows(values_only=True)
        header = [str(h) if h is not None else "" for h in next(rows, ())]
        for line, values in enumerate(rows, start=1):
            if all(v is None for v in values):
                yield line, BadRow(line, "empty row")
                continue
            yield line, {h: ("" if v is None else str(v)) for h, v in zip(header, values)}
    finally:
        book.close()


def _json(path: str) -> Iterator[Row]:
    with open(path, encoding="utf-8") as handle:
        first = handle.read(1)
        while first and first.isspace():
            first = handle.read(1)
        handle.seek(0)
        if first == "[":
            for line, value in enumerate(json.load(handle), start=1):
                yield line, _object(line, value)
            return
        for line, text in enumerate(handle, start=1):
            try:
                yield line, _object(line, json.loads(text))
            except json.JSONDecodeError as exc:
                yield line, BadRow(line, f"not JSON: {exc}")


def _object(line: int, value: Any) -> dict[str, Any] | BadRow:
    if not isinstance(value, dict):
        return BadRow(line, f"expected an object, got {type(value).__name__}")
    return {k: v if isinstance(v, list) or v is None else str(v) for k, v in value.items()}
