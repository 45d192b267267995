"""Bench: what storing items costs the crawl (discard vs SQLite vs PostgreSQL), and the shop's own rate.

    python bench/crawl_store.py [--releases 5000]

Prints pages/s and items/s of three crawls of the same demo shop (each run --repeat times,
interleaved, median reported: this machine is noisy), each with its ratio to the discard run (target: PostgreSQL store costs at most 15 % of throughput), and the
demo shop's own rate (it must be several times the crawl's, so it is never the bottleneck).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import shop_rate, table  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402
from tests.services import PostgresDatabase, run_crawl  # noqa: E402


def crawl(shop: ShopProcess, workdir: Path, database_url: str, *settings: str) -> tuple[float, float, float]:
    result = run_crawl(workdir, database_url, "-a", "source=demo", "-a", f"base_url={shop.url}",
                       "-s", "LOG_LEVEL=WARNING", *settings)
    if result.returncode != 0:
        raise SystemExit(f"crawl failed:\n{result.stderr[-2000:]}")
    elapsed = result.summary["elapsed_seconds"]
    return elapsed, result.summary["pages"] / elapsed, result.summary["items_scraped"] / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in RUNS}
    with ShopProcess(args.releases, seed=11) as shop, tempfile.TemporaryDirectory() as tmp:
        truth = shop.truth()
        rate = shop_rate(shop.url, [o["path"] for o in truth["offers"]] * 2)
        work = Path(tmp)
        for round_ in range(args.repeat):
            runs["discard (baseline)"].append(crawl(shop, work, f"sqlite:///{work / 'unused.sqlite3'}",
                                                    "-s", "RECORDHOUND_STORE_ENABLED=false"))
            runs["SQLite store"].append(crawl(shop, work, f"sqlite:///{work / f'bench{round_}.sqlite3'}"))
            with PostgresDatabase() as pg:
                runs["PostgreSQL store"].append(crawl(shop, work, pg.url))
    medians = {name: _median(results) for name, results in runs.items()}
    base = medians["discard (baseline)"]
    rows = [("run (median of %d)" % args.repeat, "seconds", "pages/s", "items/s", "ratio to discard")]
    rows += [(name, f"{s:.1f}", f"{p:.0f}", f"{i:.0f}", f"{p / base[1]:.2f}x")
             for name, (s, p, i) in medians.items()]
    print(f"demo shop: {args.releases} releases, {truth['counts']['offers']} offers; "
          f"CONCURRENT_REQUESTS=32; one 2-core machine (shop and crawler share it)")
    print(table(rows))
    print(f"demo shop alone: {rate:.0f} requests/s with 32 keep-alive connections = "
          f"{rate / base[1]:.1f}x the baseline crawl's pages/s")


RUNS = ("discard (baseline)", "SQLite store", "PostgreSQL store")


def _median(results: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    ordered = sorted(results, key=lambda r: r[1])
    return ordered[len(ordered) // 2]

if __name__ == "__main__":
    main()
