"""Bench: how long a short crawl takes from start to exit, stock Scrapy against a recordhound node.

    python bench/startup.py [--rounds 8] [--pages 40] [--releases 2000]

Crawls the demo shop until ``CLOSESPIDER_PAGECOUNT=--pages`` in interleaved rounds (``bench/crawls.py``,
as the side-by-side bench runs them): stock Scrapy, a node with the store off and a node with the store
on (one SQLite product database, brought to the schema's head before the first round, as on every
crawl of a source but its first; its writer process counted). Each run is one process from start to
exit, so the figures are start-up and leaving with a few pages between: wall seconds and CPU seconds
(rusage, children included), medians of the rounds, and each as a ratio to stock's median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from bench.crawls import MODES, Bench, Run  # noqa: E402
from recordhound.db.migrate import open_database  # noqa: E402

LABELS = {"stock": "stock Scrapy", "embedded": "node, store off", "embedded-sqlite": "node, store on (SQLite)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--releases", type=int, default=2000)
    args = parser.parse_args()
    if args.rounds < 1 or args.pages < 1:
        parser.error("--rounds and --pages must be at least 1")
    runs: dict[str, list[Run]] = {name: [] for name in LABELS}
    with Bench(args.releases, seed=11, shared=(f"CLOSESPIDER_PAGECOUNT={args.pages}",)) as bench:
        bench.sqlite_store = f"sqlite:///{bench.work / 'product.sqlite3'}"
        open_database(bench.sqlite_store).dispose()  # at the head, as after a source's first crawl
        names = list(LABELS)
        for round_ in range(args.rounds):
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:
                runs[name].append(bench.run(MODES[name]))
            print(f"  round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    wall = {name: statistics.median(run.seconds for run in found) for name, found in runs.items()}
    cpu = {name: statistics.median(run.cpu_seconds for run in found) for name, found in runs.items()}
    rows = [("run", "pages (fewest)", "wall s (median)", "wall x stock", "CPU s (median)", "CPU x stock")]
    rows += [(LABELS[name], str(min(run.pages for run in runs[name])), f"{wall[name]:.2f}",
              f"{wall[name] / wall['stock']:.2f}", f"{cpu[name]:.2f}", f"{cpu[name] / cpu['stock']:.2f}")
             for name in LABELS]
    print(f"demo shop: {args.releases:,} releases; CLOSESPIDER_PAGECOUNT={args.pages}; {args.rounds} interleaved rounds")
    print(table(rows))


if __name__ == "__main__":
    main()
