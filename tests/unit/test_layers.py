"""The layers import one way: ``db`` knows neither the review queue nor the catalog writer."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "recordhound"


def imports_of(folder: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (PACKAGE / folder).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        found[str(path.relative_to(PACKAGE))] = names
    return found


def test_db_imports_neither_review_nor_catalog() -> None:
    upward = {path: sorted(n for n in names if n.startswith(("recordhound.review", "recordhound.catalog")))
              for path, names in imports_of("db").items()}
    assert {p: n for p, n in upward.items() if n} == {}


def test_review_imports_nothing_from_the_catalog_layer() -> None:
    users = {path for path, names in imports_of("review").items()
             if any(n.startswith("recordhound.catalog") for n in names)}
    assert users == set()  # `recordhound apply` (in cli.py) runs the catalog's apply worker
