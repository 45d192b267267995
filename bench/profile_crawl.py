"""Bench: where a crawler node spends its CPU per page, by py-spy (the `bench` extra installs it).

    python bench/profile_crawl.py [--mode embedded|redis|embedded-store|redis-store] [--releases 18000]

Crawls the demo shop once under ``py-spy record --format raw --subprocesses`` (a private redis-server
for the Redis modes, a PostgreSQL database of its own for ``redis-store``; ``-store`` keeps the items,
else they are discarded) and prints the top functions by their own samples, then each sample charged to
the deepest recordhound frame on its stack (recordhound's work with the library calls it makes; the
rest is Scrapy, Twisted, asyncio and lxml working for the engine). Idle threads are left out (py-spy
counts some waits as active). The figures are shares of one run, for finding hot spots, not timings:
py-spy's own CPU and a busy machine change the totals.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from recordhound.demo.process import ShopProcess  # noqa: E402
from tests.redisserver import RedisServer  # noqa: E402
from tests.services import PostgresDatabase  # noqa: E402

IDLE = ("Condition.wait", "Event.wait", "Queue.get", "select (", "EpollSelector.select", "_worker (",
        "_PollLikeSelector.select", "lock.acquire")


def record(shop_url: str, work: Path, out: Path, database_url: str, redis_url: str, store: bool) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
           "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}
    crawl = [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo", "-a", f"base_url={shop_url}",
             "-s", "LOG_LEVEL=WARNING", "-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true",
             "-s", f"RECORDHOUND_STORE_ENABLED={'true' if store else 'false'}"]
    spy = [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw", "--subprocesses",
           "-r", "100", "-o", str(out), "--"]
    subprocess.run(spy + crawl, cwd=work, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def shares(raw: Path) -> tuple[int, Counter[str], Counter[str]]:
    """(samples, own samples per function, samples per deepest recordhound function)."""
    own: Counter[str] = Counter()
    deepest: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";") if not f.startswith(("process ", "thread ("))]
        if not frames or frames[-1].startswith(IDLE):
            continue
        total += int(count)
        own[frames[-1]] += int(count)
        ours = [f for f in frames if "(recordhound/" in f and "commands/crawl.py" not in f]
        deepest[ours[-1] if ours else "(no recordhound frame: Scrapy, Twisted, asyncio, lxml)"] += int(count)
    return total, own, deepest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="embedded", choices=("embedded", "redis", "embedded-store", "redis-store"))
    parser.add_argument("--releases", type=int, default=18000)  # about 20,000 pages
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ShopProcess(args.releases, seed=11) as shop:
        work, out = Path(tmp), Path(tmp) / "profile.txt"
        database_url, redis_url = f"sqlite:///{work / 'catalog.sqlite3'}", ""
        server = RedisServer(work / "redis", "--save", "", "--appendonly", "no").start() \
            if args.mode.startswith("redis") else None
        try:
            redis_url = server.url if server else ""
            if args.mode == "redis-store":
                with PostgresDatabase() as pg:
                    record(shop.url, work, out, pg.url, redis_url, store=True)
            else:
                record(shop.url, work, out, database_url, redis_url, store=args.mode.endswith("store"))
        finally:
            if server is not None:
                server.kill()
        total, own, deepest = shares(out)
    print(f"{args.mode}: {total} samples (100 Hz) of a crawl of {args.releases} demo releases")
    print("own samples, top functions:")
    print("\n".join(f"  {n / total:6.1%}  {name}" for name, n in own.most_common(args.top)))
    print("samples by the deepest recordhound frame (its work and the libraries it calls):")
    print("\n".join(f"  {n / total:6.1%}  {name}" for name, n in deepest.most_common(args.top)))


if __name__ == "__main__":
    main()
