"""What one batch of the catalog writer did: returned from the writer process to the crawler,
which adds it up without loading the writer (SQLAlchemy's models, the review gate)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class BatchResult:
    """What one batch did; added up into the crawl's stats and summary."""

    items: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    rejections: list[tuple[str, str]] = field(default_factory=list)  # (url or line, reason)
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, url, what): written, with a flaw

    def add(self, other: BatchResult) -> None:
        """``other``'s items, counts, rejections and problems added to these."""
        self.items += other.items
        self.counts.update(other.counts)
        self.rejections += other.rejections
        self.problems += other.problems
