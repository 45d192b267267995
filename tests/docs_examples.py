"""The code blocks of README.md and docs/: found, classified and prepared to run.

A fenced block is run by ``tests/integration/test_docs_examples.py`` according to its language:

- ``bash``: its commands run in one temporary folder per page, blocks in page order, with the
  project's ``.venv/bin`` first on PATH and against a demo shop the test started on a free port
  (``127.0.0.1:8070`` in the text is rewritten to it; the line that starts a demo shop on 8070
  in the background is dropped, since that shop is already serving);
- ``yaml``: a source profile (a document with ``name:``) goes through the profile loader; a
  fragment (``price:``, ``retry:``, ...) is merged into the bundled demo profile and validated;
- ``python``: executed, in the page's folder, between the page's bash blocks;
- ``text`` and ``mermaid``: output and diagrams, not run.

An HTML comment on the line above a block changes that:
``<!-- example: skip: REASON -->`` (not run; the reason is required) and
``<!-- example: not-a-profile: REASON -->`` (YAML that is checked as YAML only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = {"bash", "python"}
KNOWN = RUN | {"yaml", "text", "mermaid"}
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
MARKER = re.compile(r"<!--\s*example:\s*(?P<kind>skip|not-a-profile):\s*(?P<reason>.+?)\s*-->")
SETTING = re.compile(r"\bRECORDHOUND_[A-Z0-9_]*[A-Z0-9]\b")
DEMO_PORT = "127.0.0.1:8070"
DEMO_SHOP_LINE = re.compile(r"^\s*(?:\S*/)?recordhound demo-shop --port 8070\b[^\n]*&\s*(?:#.*)?$", re.M)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marker: str  # "", "skip" or "not-a-profile"
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page of the docs site, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening["indent"])
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        code = "\n".join(line[indent:] for line in lines[index + 1:end]) + "\n"
        marker = _marker_above(lines, index)
        found.append(Block(path, index + 1, opening["lang"], code, *marker))
        index = end + 1
    return found


def _marker_above(lines: list[str], index: int) -> tuple[str, str]:
    above = index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    match = MARKER.search(lines[above]) if above >= 0 else None
    return (match["kind"], match["reason"]) if match else ("", "")


def shell_script(code: str, port: int, venv_bin: Path, replacements: dict[str, str]) -> str:
    """A bash block as it runs in the test: the demo shop's port, the venv, the test's services."""
    code = DEMO_SHOP_LINE.sub("# (the test's demo shop is already serving)", code)
    code = code.replace(DEMO_PORT, f"127.0.0.1:{port}").replace(".venv/bin/", f"{venv_bin}/")
    for old, new in replacements.items():
        code = code.replace(old, new)
    return code


def setting_names(text: str) -> set[str]:
    return set(SETTING.findall(text))
