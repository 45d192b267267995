"""MkDocs hook: the settings reference, generated from ``recordhound/settings.py``.

Every setting is written once, in ``settings.py``, with its default and a comment that says
what it does and its unit. ``docs/reference/settings.md`` holds the marker
``<!-- generated: settings -->``; this hook replaces it with one table per section of
``settings.py`` (the ``# --- Section ---`` lines): name, default, unit, what it does.

How a comment belongs to a setting: the comment lines right above its assignment, and the
comment at the end of its line. A ``RECORDHOUND_*`` setting without either fails the build.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SETTINGS = Path(__file__).resolve().parent.parent / "recordhound" / "settings.py"
MARKER = "<!-- generated: settings -->"
SECTION = re.compile(r"^#\s*---\s*(?P<title>.+?)\s*-+\s*$")
UNIT_IN_TEXT = re.compile(r"(?:\(|^)(?P<unit>seconds|count|bool|percent|0-1)\b")
UNIT_BY_SUFFIX = {"_SECONDS": "seconds", "_PCT": "percent", "_THRESHOLD": "percent"}


@dataclass(frozen=True)
class Setting:
    section: str
    name: str
    default: str
    unit: str
    doc: str


def read_settings(path: Path = SETTINGS) -> list[Setting]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    trailing = _trailing_comments(source)
    found: list[Setting] = []
    section = "Scrapy project"
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        above, section = _comment_above(lines, node.lineno - 1, section)
        doc = " ".join(part for part in (above, trailing.get(node.lineno, "")) if part)
        name = node.targets[0].id
        if name.startswith("RECORDHOUND_") and not doc:
            raise ValueError(f"{path}:{node.lineno}: {name} has no comment saying what it does")
        found.append(Setting(section, name, ast.unparse(node.value), _unit(name, doc, node.value), doc))
    return found


def _comment_above(lines: list[str], index: int, section: str) -> tuple[str, str]:
    """The comment block right above line ``index``, and the section that line is in."""
    block: list[str] = []
    row = index - 1
    while row >= 0 and lines[row].startswith("#") and not SECTION.match(lines[row]):
        block.insert(0, lines[row].lstrip("#").strip())
        row -= 1
    for earlier in range(row, -1, -1):
        match = SECTION.match(lines[earlier])
        if match:
            section = match["title"]
            break
    return " ".join(block), section


def _trailing_comments(source: str) -> dict[int, str]:
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.line.strip() != token.string.strip():
            comments[token.start[0]] = token.string.lstrip("#").strip()
    return comments


def _unit(name: str, doc: str, value: ast.expr) -> str:
    match = UNIT_IN_TEXT.search(doc)
    if match:
        return "share (0-1)" if match["unit"] == "0-1" else match["unit"]
    for suffix, unit in UNIT_BY_SUFFIX.items():
        if name.endswith(suffix):
            return unit
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        return "bool"
    return ""


def settings_tables(settings: list[Setting]) -> str:
    out: list[str] = []
    for section in dict.fromkeys(s.section for s in settings):
        out += [f"## {section}", "", "| setting | default | unit | what it does |", "|---|---|---|---|"]
        for s in (s for s in settings if s.section == section):
            default = s.default.replace("|", "\\|")
            doc = s.doc.replace("|", "\\|")
            out.append(f"| `{s.name}` {{: #{s.name} }} | `{default}` | {s.unit} | {doc} |")
        out.append("")
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, settings_tables(read_settings()))
