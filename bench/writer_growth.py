"""Bench: does the store's cost per batch hold as the catalogue grows? The writer alone, no crawl.

    python bench/writer_growth.py [--batches 400] [--batch 100] [--titles N] [--postgresql]

A trusted source writes ``--batches`` batches of ``--batch`` new releases (each with a new artist
and label, one of 40 styles, two offers, no catalogue number with ``--titles``), as a crawl of a large shop does, into a fresh SQLite file
(or a fresh PostgreSQL database). Prints the writer's ms per batch in each tenth of the batches and
the last tenth over the first (target: >= 0.9 as pages/s, so <= 1.1 here), with the rows stored.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.catalog.writer import CatalogWriter, ReviewPolicy  # noqa: E402
from recordhound.db.migrate import open_database  # noqa: E402
from recordhound.db.sources import ensure_source  # noqa: E402
from recordhound.items import Offer, Release  # noqa: E402
from recordhound.review.docstore import SqliteDocStore  # noqa: E402
from recordhound.review.queue import ReviewQueue  # noqa: E402


def batch(number: int, size: int, titles: int = 0) -> list[Release]:
    """``titles``: releases take their titles from a pool this big, without catalogue numbers, so
    each is matched by title + year + artists (0: every title new, each with a catalogue number)."""
    items = []
    for n in range(number * size, (number + 1) * size):
        url = f"http://shop/release/{n}"
        offers = [Offer(f"{n}-{kind}", url, kind, "new", None, None, Decimal("12.50") + n % 7, "EUR")
                  for kind in ("LP", "CD")]
        title, catno = (f"Title {n % titles}", None) if titles else (f"Title {n}", f"CAT-{n}")
        items.append(Release("bench", url, str(n), title, [f"Artist {n}"], f"Label {n // 3}",
                             catno, 1990 + n % 30, [f"Style {n % 40}"], offers=offers))
    return items


def run(url: str, batches: int, size: int, workdir: Path, titles: int) -> list[float]:
    engine = open_database(url)
    queue = ReviewQueue(SqliteDocStore(str(workdir / "review.sqlite3")))
    writer = CatalogWriter(engine, timedelta(hours=1), queue, ReviewPolicy(trusted=True, price_threshold_pct=100))
    source = ensure_source(engine, "bench", "html", "http://shop/")
    spent = []
    try:
        for number in range(batches):
            items = batch(number, size, titles)
            started = time.perf_counter()
            writer.write(source, items)
            spent.append(time.perf_counter() - started)
            if (number + 1) % max(1, batches // 10) == 0:
                print(f"  {number + 1}/{batches} batches, {sum(spent):.1f} s", file=sys.stderr)
    finally:
        queue.close()
        engine.dispose()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--titles", type=int, default=0, help="titles repeat from a pool this big")
    parser.add_argument("--postgresql", action="store_true", help="a fresh PostgreSQL database (tests.services)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.postgresql:
            from tests.services import PostgresDatabase

            with PostgresDatabase() as database:
                spent = run(database.url, args.batches, args.batch, Path(tmp), args.titles)
        else:
            spent = run(f"sqlite:///{Path(tmp) / 'product.sqlite3'}", args.batches, args.batch, Path(tmp), args.titles)
    tenth = max(1, len(spent) // 10)
    per_tenth = [sum(spent[i:i + tenth]) / len(spent[i:i + tenth]) * 1000 for i in range(0, len(spent), tenth)]
    print(table([("store", "releases", "ms per batch in each tenth", "last tenth / first"),
                 ("PostgreSQL" if args.postgresql else "SQLite", f"{args.batches * args.batch:,}",
                  " ".join(f"{ms:.0f}" for ms in per_tenth), f"{per_tenth[-1] / per_tenth[0]:.2f}")]))


if __name__ == "__main__":
    main()
