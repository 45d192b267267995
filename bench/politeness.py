"""Bench: per-host limits held by several nodes together, and what retries in the frontier cost.

    python bench/politeness.py [--releases 300] [--nodes 3]

1. ``--nodes`` crawler nodes on one Redis crawl the demo shop (each answer takes 0.1 s), with the
   limits off (the baseline) and with ``requests_per_second: 20, concurrency: 4``: the shop's own
   record of its busiest second and its peak of requests in flight, and the wall time.
2. One embedded node crawls a shop where 10 % of the product pages answer 503 twice before they
   work, against the same shop without failures (the baseline): the wall time, and whether every
   release was stored (default retry settings: 1 s base, jittered, doubling).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402
from tests.integration.crawlers import CrawlSetup  # noqa: E402
from tests.integration.truthcheck import tally  # noqa: E402
from tests.services import PostgresDatabase, redis_url  # noqa: E402

LIMITS = ("RECORDHOUND_POLITENESS_REQUESTS_PER_SECOND=20", "RECORDHOUND_POLITENESS_CONCURRENCY=4")


def cluster(releases: int, nodes: int, work: Path, limits: tuple[str, ...]) -> tuple[str, ...]:
    work.mkdir()
    with ShopProcess(releases, seed=61, throttle=("--latency", "0.1")) as shop, PostgresDatabase() as db:
        setup = CrawlSetup(work, shop.url, db.url, redis_url())
        try:
            started = time.monotonic()
            crawlers = [setup.start(*limits, name=f"node{i}") for i in range(nodes)]
            codes = [crawler.wait(1800) for crawler in crawlers]
            wall = time.monotonic() - started
            stats, result = shop.stats(), tally(setup, shop.truth())
        finally:
            setup.cleanup()
    if codes != [0] * nodes:
        raise SystemExit(f"a node failed: exit codes {codes}; see {work}")
    seconds = list(stats["per_second"].values())
    mean = sum(seconds) / max(1, len(seconds))
    return (f"{seconds and max(seconds)}", f"{mean:.1f}", str(stats["max_in_flight"]), f"{wall:.1f}",
            str(result["lost"]))


def failing(releases: int, work: Path, throttle: tuple[str, ...]) -> tuple[float, int, int]:
    work.mkdir()
    with ShopProcess(releases, seed=62, throttle=throttle) as shop:
        setup = CrawlSetup(work, shop.url, f"sqlite:///{work / 'product.sqlite3'}")
        started = time.monotonic()
        code = setup.start().wait(1800)
        wall = time.monotonic() - started
        if code != 0:
            raise SystemExit(f"the crawl failed (exit {code}); see {work}")
        result = tally(setup, shop.truth())
        return wall, result["lost"], shop.stats()["refused"].get("503", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        off = cluster(args.releases, args.nodes, work / "off", ())
        on = cluster(args.releases, args.nodes, work / "on", LIMITS)
        print(f"{args.nodes} nodes on one Redis, demo shop of {args.releases} releases answering in 0.1 s:")
        print(table([("limits", "busiest second (requests)", "mean requests/s", "peak in flight", "wall s", "lost"),
                     ("off (baseline)", *off), ("20/s, 4 in flight", *on)]))
        ok = failing(args.releases, work / "ok", ())
        bad = failing(args.releases, work / "failing", ("--unavailable-every", "10", "--unavailable-times", "2"))
        print(f"\none embedded node, {args.releases} releases; 10 % of product pages answer 503 twice first:")
        print(table([("shop", "wall s", "ratio", "503s answered", "lost"),
                     ("no failures (baseline)", f"{ok[0]:.1f}", "1.00x", str(ok[2]), str(ok[1])),
                     ("10 % fail twice", f"{bad[0]:.1f}", f"{bad[0] / ok[0]:.2f}x", str(bad[2]), str(bad[1]))]))


if __name__ == "__main__":
    main()
