"""Import a file source row by row through the same items, matching and review path as a crawl.

The source's metadata says how far it got: ``last_parsed_line``, ``total_lines``, ``parsed_at``,
``status`` (in_progress | completed | failed) and ``error_message``. ``last_parsed_line`` is
written only after the rows up to it are stored, parked or rejected, so an import killed at
line 4,523 resumes at the first row whose batch was not finished (at most one batch is read
again, and writing it again changes nothing).

A file is not a crawl: there are no URLs to schedule, so no frontier — the row number is the
whole resume state.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import Engine, select

from recordhound.db.models import Source
from recordhound import failpoints
from recordhound.backoff import retried
from recordhound.catalog.errors import is_transient, refusal
from recordhound.exceptions import reason
from recordhound.catalog.writer import CatalogWriter
from recordhound.db.sources import ensure_source, update_source_meta
from recordhound.text import now_iso
from recordhound.items import RawRelease, Release
from recordhound.normalize import normalize_release
from recordhound.review import gate
from recordhound.sources.files import BadRow, SourceFileError, columns, count_rows, file_kind, read_rows
from recordhound.sources.profile import MANY_FIELDS, Profile

logger = logging.getLogger(__name__)
ERRORS_KEPT = 100
REQUIRED = ("external_id", "title")  # fields without which a row is rejected
T = TypeVar("T")


@dataclass
class ImportResult:
    source_id: int
    first_line: int
    last_line: int
    total_lines: int
    counts: Counter[str] = field(default_factory=Counter)
    stopped: bool = False  # asked to stop: ``last_line`` is where a resume continues after


class FileImport:
    def __init__(self, profile: Profile, path: str, engine: Engine, writer: CatalogWriter,
                 batch_size: int = 500, progress: Callable[[int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None, retry_max_seconds: float = 30.0) -> None:
        self.profile, self.path = profile, os.path.abspath(path)
        self.kind = file_kind(path, profile.kind)
        self.engine, self.writer, self.batch_size = engine, writer, batch_size
        self.progress = progress or (lambda _: None)
        self.should_stop = should_stop or (lambda: False)  # asked after each batch: stop there (resumable)
        self.retry_max_seconds = retry_max_seconds  # the longest wait between two tries while a store is away
        self.counts: Counter[str] = Counter()
        self.errors: list[dict[str, Any]] = []
        self.recorded = 0  # the last line whose batch is recorded (``run``)

    def prepare(self, restart: bool = False) -> tuple[int, int, int]:
        """(source id, first line to read, total lines); resumes an unfinished import of this file."""
        source_id = ensure_source(self.engine, self.profile.name, self.profile.kind, self.path)
        with self.engine.connect() as conn:
            meta: dict[str, Any] = conn.execute(select(Source.meta).where(Source.id == source_id)).scalar_one() or {}
        self._check_columns()
        total = count_rows(self.path, self.kind)
        stat = os.stat(self.path)
        identity = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}  # the file the line numbers are of
        resume = (not restart and meta.get("status") in ("in_progress", "failed", "stopped")
                  and meta.get("file") == self.path)
        if resume and meta.get("file_identity", identity) != identity:
            logger.warning("%s changed since its import stopped at line %s: importing it from line 1 (rows already "
                           "imported are found, not written twice)", self.path, meta.get("last_parsed_line"))
            resume = False
        first = int(meta.get("last_parsed_line") or 0) + 1 if resume else 1
        self.errors = list(meta.get("line_errors") or []) if resume else []
        self.counts = Counter(meta.get("counts") or {}) if resume else Counter()
        # (the counts too: a run killed before its first progress resumes with these, not the last run's)
        update_source_meta(self.engine, source_id, {
            "status": "in_progress", "file": self.path, "total_lines": total, "error_message": None,
            "last_parsed_line": first - 1, "started_at": now_iso(), "line_errors": self.errors,
            "counts": dict(self.counts), "file_identity": identity})
        if first > 1:
            logger.info("Resuming %s at line %d of %d", self.path, first, total)
        return source_id, first, total

    def _check_columns(self) -> None:
        """A CSV or spreadsheet whose header lacks a column the profile reads as the row's id or title would
        reject every row: one error before anything is read (a file separated by ``;``, another export)."""
        found = columns(self.path, self.kind)
        wanted = [self.profile.fields[name].selectors[0].query for name in REQUIRED if name in self.profile.fields]
        missing = [column for column in wanted if found is not None and column not in found]
        if found and missing:
            hint = "; is it separated by ';'?" if len(found) == 1 and ";" in found[0] else ""
            raise SourceFileError(f"{self.path}: the header has no column {', '.join(map(repr, missing))} (profile "
                                  f"{self.profile.name!r} reads each row's id and title from {', '.join(wanted)}); "
                                  f"its columns: {', '.join(found)[:200]}{hint}")

    def run(self, source_id: int, first: int, total: int) -> ImportResult:
        started = last_log = time.monotonic()
        batch: list[Release] = []
        bad: list[tuple[int, str]] = []
        line = self.recorded = first - 1  # the last line whose batch is recorded
        at = f"line {first}"  # where an error that ends the import met it
        try:
            for line, row in read_rows(self.path, self.kind):
                if line < first:
                    continue
                at = f"line {line}"
                item = self._item(line, row, bad)
                if item is not None:
                    batch.append(item)
                if len(batch) >= self.batch_size or len(bad) >= self.batch_size:
                    at = f"the batch of rows up to line {line}"
                    self._flush(source_id, batch, bad, line)
                    batch, bad = [], []
                    if self.should_stop():
                        return self._stopped(source_id, first, total)
                    if time.monotonic() - last_log >= 10:
                        last_log = time.monotonic()
                        logger.info("Line %d of %d (%.0f lines/s): %s", line, total,
                                    (line - first + 1) / (last_log - started), dict(self.counts))
                at = f"line {line + 1}"
            at = f"the batch of rows up to line {line}"
            self._flush(source_id, batch, bad, line)
        except _StoppedWaiting:
            return self._stopped(source_id, first, total)
        except Exception as exc:
            update_source_meta(self.engine, source_id, {
                "status": "failed", "error_message": f"{at}: {type(exc).__name__}: {exc}",
                "parsed_at": now_iso()})
            raise
        update_source_meta(self.engine, source_id, {
            "status": "completed", "parsed_at": now_iso(), "counts": dict(self.counts),
            "error_message": None if not self.errors else f"{len(self.errors)} lines could not be used"})
        return ImportResult(source_id, first, line, total, self.counts)

    def _stopped(self, source_id: int, first: int, total: int) -> ImportResult:
        """Asked to stop: after a batch, or while a store is away (then its status may not be written: the
        next run resumes after the last batch recorded all the same)."""
        try:
            update_source_meta(self.engine, source_id, {"status": "stopped", "parsed_at": now_iso()})
        except Exception as exc:
            if not is_transient(exc):
                raise
            logger.warning("%s: stopped at line %d; the product database does not answer (%s): its status is "
                           "left as it was", self.path, self.recorded, reason(exc))
        return ImportResult(source_id, first, self.recorded, total, self.counts, stopped=True)

    def _item(self, line: int, row: dict[str, Any] | BadRow, bad: list[tuple[int, str]]) -> Release | None:
        if isinstance(row, BadRow):
            bad.append((line, row.reason))
            return None
        try:
            outcome = normalize_release(self._raw(line, row), self.profile)
        except BadValue as exc:
            bad.append((line, str(exc)))
            return None
        except Exception as exc:  # noqa: BLE001 - a row that cannot be read is that row's error, never the file's
            bad.append((line, f"{type(exc).__name__}: {exc}"))
            return None
        if outcome.release is None:
            bad.append((line, outcome.rejected or "unusable row"))
            return None
        for problem in outcome.problems:
            self.counts[f"field_problems/{problem.field}"] += 1
        return outcome.release

    def _raw(self, line: int, row: dict[str, Any]) -> RawRelease:
        values: dict[str, Any] = {}
        for name, spec in self.profile.fields.items():
            value = row.get(spec.selectors[0].query)
            if name in MANY_FIELDS:
                value = [str(_one(name, v)) for v in (value if isinstance(value, list) else [value])
                         if v not in (None, "")]
            elif value is not None:
                value = _one(name, value)
            values[name] = value
        return RawRelease(source=self.profile.name, url=f"{self.path}#line={line}", line=line, **values)

    def _flush(self, source_id: int, batch: list[Release], bad: list[tuple[int, str]], line: int) -> None:
        refused: list[tuple[int, str]] = []  # rows the writer cannot write (a value longer than its column...)
        if batch:
            result = self._through_outages(lambda: self.writer.write(source_id, batch), f"rows up to line {line}")
            failpoints.hit("import.after_commit")
            self.counts.update({k: v for k, v in result.counts.items()
                                if k in ("stored", "parked", "rejected", "prices_held")})
            self.counts["rejected"] += result.counts["invalid"]  # (recorded in the review queue by the writer)
            refused = [(int(where.removeprefix("line ")), reason) for where, reason in result.rejections]
        if bad:
            self._through_outages(lambda: self.writer.queue.reject([
                (f"{source_id}:line:{n}", {"line": n}, gate.Origin(source_id, self.profile.name, f"line {n}"),
                 why) for n, why in bad]), f"line errors up to line {line}")
            self.counts["rejected"] += len(bad)
        if bad or refused:
            errors = sorted(bad + refused)
            self.errors = (self.errors + [{"line": n, "reason": r} for n, r in errors])[-ERRORS_KEPT:]
            for n, why in errors:
                logger.warning("%s line %d: %s", self.path, n, why)
        progress = {"last_parsed_line": line, "parsed_at": now_iso(), "counts": dict(self.counts),
                    "line_errors": self.errors}
        self._through_outages(lambda: update_source_meta(self.engine, source_id, progress), f"progress at line {line}")
        self.recorded = line
        self.progress(line)

    def _through_outages(self, call: Callable[[], T], what: str) -> T:
        """``call()``, again while the product database or the review queue does not answer (each step of a
        batch is idempotent: a row written again is found), backing off to ``retry_max_seconds``, one warning
        per try, as a crawl's store waits; a refusal (a role without rights...) is raised, and a stop asked
        while it waits ends the import (``_wait``: it resumes at the last batch recorded)."""
        def retry(exc: Exception, attempt: int, delay: float) -> None:
            logger.warning("%s: the product database or the review queue is unreachable (%s): writing the %s "
                           "again in %.1f s (try %d)", self.path, reason(exc), what, delay, attempt)

        return retried(call, lambda exc: is_transient(exc) and refusal(exc) is None, self.retry_max_seconds, retry,
                       self._wait)

    def _wait(self, seconds: float) -> None:
        """A second at a time: ``progress`` told each (an import job's heartbeat, which reads its stop), and a
        stop asked ends the wait (``_StoppedWaiting``)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.progress(self.recorded)
            if self.should_stop():
                raise _StoppedWaiting
            time.sleep(min(1.0, left))


class _StoppedWaiting(Exception):
    """A stop asked while a store was away: the import ends ``stopped`` after its last batch recorded."""


class BadValue(ValueError):
    """A row's value that no field can take: the row is a line error."""


def _one(name: str, value: Any) -> Any:
    """``value`` as one value of field ``name``: a JSON list or object where one value is expected, or text
    that is not UTF-8 (a lone surrogate escape, which JSON allows), is the row's error."""
    if isinstance(value, (list, dict)):
        raise BadValue(f"{name}: {'a list' if isinstance(value, list) else 'an object'} where one value is expected")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadValue(f"{name}: not UTF-8 text (a lone surrogate at character {exc.start + 1})") from None
    return value
