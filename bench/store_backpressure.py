"""Bench: the crawler's memory when the product store is slower than the crawl.

    python bench/store_backpressure.py [--releases 15000] [--delay 0.02] [--bound N] [--redis] [--postgresql]

Crawls one demo shop twice with a deliberately slow store (RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS,
seconds per item): first with back-pressure off (RECORDHOUND_STORE_MAX_WAITING_ITEMS so high it never
pauses: the baseline), then with the default bound (or ``--bound``). Prints the crawler process's RSS (not its
writer child's) at each tenth of the crawl, its peak, and the back-pressure stats.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402
from recordhound.settings import RECORDHOUND_STORE_MAX_WAITING_ITEMS  # noqa: E402
from tests.integration.crawlers import CrawlSetup  # noqa: E402
from tests.services import PostgresDatabase, redis_url  # noqa: E402

OFF = 10**9  # a bound the crawl never reaches


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def crawl(setup: CrawlSetup, shop: ShopProcess, name: str, bound: int, delay: float) -> dict[str, Any]:
    total, before = shop.truth()["counts"]["offers"], shop.pages_served()  # the shop serves both runs
    crawler = setup.start(f"RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS={delay}",
                          f"RECORDHOUND_STORE_MAX_WAITING_ITEMS={bound}", "LOG_LEVEL=WARNING", name=name)
    samples: list[tuple[float, float]] = []  # (share of the shop's product pages served, RSS MB)
    try:
        while crawler.process.poll() is None:
            try:
                samples.append((min((shop.pages_served() - before) / total, 1.0), rss_mb(crawler.process.pid)))
            except (FileNotFoundError, ProcessLookupError):
                break
            time.sleep(1.0)
        code = crawler.wait(60)
    finally:
        crawler.ensure_stopped()
        setup.cleanup()
    if code != 0:
        raise SystemExit(f"{name}: the crawl exited {code}; see {setup.workdir / (name + '.log')}")
    stats = crawler.stats()
    tenths = [max((r for share, r in samples if share <= (i + 1) / 10), default=0.0) for i in range(10)]
    return {"tenths": tenths, "peak": max(r for _, r in samples), "stats": stats}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=15000)
    parser.add_argument("--delay", type=float, default=0.02, help="store delay, seconds per item")
    parser.add_argument("--bound", type=int, default=RECORDHOUND_STORE_MAX_WAITING_ITEMS,
                        help="RECORDHOUND_STORE_MAX_WAITING_ITEMS of the second run")
    parser.add_argument("--redis", action="store_true", help="the Redis frontier (else embedded)")
    parser.add_argument("--postgresql", action="store_true", help="a PostgreSQL store (else SQLite)")
    args = parser.parse_args()
    results = {}
    with ShopProcess(args.releases, seed=11) as shop, tempfile.TemporaryDirectory() as tmp:
        runs = (("back-pressure off (baseline)", OFF), (f"bound {args.bound}", args.bound))
        for index, (name, bound) in enumerate(runs):
            work = Path(tmp) / str(index)
            work.mkdir()
            pg = PostgresDatabase() if args.postgresql else None
            url = pg.__enter__().url if pg else f"sqlite:///{work / 'product.sqlite3'}"
            try:
                setup = CrawlSetup(work, shop.url, url, redis_url() if args.redis else "")
                results[name] = crawl(setup, shop, f"run{index}", bound, args.delay)
            finally:
                if pg:
                    pg.__exit__(None, None, None)
    print(f"demo shop: {args.releases} releases; store delayed {args.delay} s/item; "
          f"{'Redis' if args.redis else 'embedded'} frontier, {'PostgreSQL' if args.postgresql else 'SQLite'} store")
    rows = [("run", "RSS MB by tenth of the crawl (max so far)", "peak", "pauses", "max waiting")]
    for name, got in results.items():
        stats = got["stats"]
        rows.append((name, " ".join(f"{r:.0f}" for r in got["tenths"]), f"{got['peak']:.0f}",
                     str(stats.get("recordhound/backpressure/pauses", 0)),
                     str(stats.get("recordhound/backpressure/max_waiting_items", "-"))))
    print(table(rows))


if __name__ == "__main__":
    main()
