"""Item classes (dataclasses, so itemadapter and feed exports handle them).

The spider yields a :class:`RawRelease` (strings exactly as the page had them); the
normalize pipeline turns it into a :class:`Release` (typed, cleaned) or drops it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal


@dataclass
class FieldProblem:
    """A field that could not be parsed, recorded on the item with where it came from."""

    field: str
    reason: str
    url: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason} ({self.url})"


@dataclass
class RawRelease:
    source: str
    url: str
    external_id: str | None = None
    title: str | None = None
    artists: list[str] = field(default_factory=list)
    label: str | None = None
    catalog_number: str | None = None
    year: str | None = None
    styles: list[str] = field(default_factory=list)
    price: str | None = None
    currency: str | None = None
    in_stock: str | None = None
    line: int | None = None  # file sources: the 1-based line (data row) the item came from
    structured: list[str] = field(default_factory=list)  # fields read from the page's structured data


@dataclass
class Release:
    source: str
    url: str
    external_id: str
    title: str
    artists: list[str]
    label: str | None = None
    catalog_number: str | None = None
    year: int | None = None
    styles: list[str] = field(default_factory=list)
    price: Decimal | None = None
    currency: str | None = None
    in_stock: bool | None = None
    problems: list[FieldProblem] = field(default_factory=list)
    line: int | None = None


@dataclass
class Unchanged:
    """A product page that answered 304 Not Modified to a recheck: its offers were seen again."""

    source: str
    url: str
