"""Bench: the persistent frontier against stock Scrapy and scrapy-redis, and its scale figures.

    python bench/frontier.py [--releases 5000] [--seen 1000000]

1. pages/s crawling the same demo shop (items discarded, CONCURRENT_REQUESTS=32) with stock
   Scrapy's in-memory scheduler (the baseline), scrapy-redis 0.9.1, recordhound embedded,
   recordhound redis (1 node) and recordhound redis (2 nodes); ratio of each to stock Scrapy.
2. Redis bytes per seen URL at --seen URLs (recordhound's bucketed hashes vs a scrapy-redis set).
3. Crawler RSS while the frontier holds --seen queued requests.
4. Time from process start to the first request when resuming with 1,000 and with --seen seen URLs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402

from bench.common import table  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402
from recordhound.frontier.backend import Entry  # noqa: E402
from recordhound.frontier.nodes import claim_node_id  # noqa: E402
from recordhound.frontier.redis import RedisFrontier  # noqa: E402
from recordhound.frontier.sqlite import SqliteFrontier  # noqa: E402
from recordhound.redis_client import crawl_prefix  # noqa: E402
from tests.services import run_crawl  # noqa: E402

REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
DISCARD = ("-s", "RECORDHOUND_STORE_ENABLED=false", "-s", "LOG_LEVEL=WARNING")
STOCK = ("-s", "SCHEDULER=scrapy.core.scheduler.Scheduler", "-s", "DUPEFILTER_CLASS=scrapy.dupefilters.RFPDupeFilter")


def scrapy_redis_settings(prefix: str) -> tuple[str, ...]:
    return ("-s", "SCHEDULER=scrapy_redis.scheduler.Scheduler",
            "-s", "DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter",
            "-s", f"REDIS_URL={REDIS_URL}", "-s", f"SCHEDULER_QUEUE_KEY={prefix}:%(spider)s:requests",
            "-s", f"SCHEDULER_DUPEFILTER_KEY={prefix}:%(spider)s:dupefilter",
            "-s", f"DUPEFILTER_KEY={prefix}:dupefilter:%(timestamp)s")


def crawl_rate(shop: ShopProcess, work: Path, *settings: str, redis_url: str = "") -> float:
    os.environ["REDIS_URL"] = redis_url
    result = run_crawl(work, f"sqlite:///{work / 'unused.sqlite3'}", "-a", "source=demo",
                       "-a", f"base_url={shop.url}", *DISCARD, *settings)
    if result.returncode != 0:
        raise SystemExit(f"crawl failed: {result.stderr[-2000:]}")
    return result.summary["pages"] / result.summary["elapsed_seconds"]


def two_nodes_rate(shop: ShopProcess, work: Path, prefix: str) -> float:
    """Both nodes' pages over the span from the first engine start to the last finish."""
    env = {**os.environ, "REDIS_URL": REDIS_URL, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
           "DATABASE_URL": f"sqlite:///{work / 'unused.sqlite3'}"}
    stats = [work / f"{prefix}-node{i}.json" for i in range(2)]
    nodes = [subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo", "-a", f"base_url={shop.url}",
         *DISCARD, "-s", f"RECORDHOUND_REDIS_PREFIX={prefix}", "-s", "RECORDHOUND_SUMMARY_ENABLED=false",
         "-s", f"RECORDHOUND_STATS_FILE={path}"], cwd=work, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for path in stats]
    if any(node.wait() != 0 for node in nodes):
        raise SystemExit("a node failed")
    reports = [json.loads(path.read_text())["stats"] for path in stats]
    start = min(datetime.fromisoformat(r["start_time"]) for r in reports)
    finish = max(datetime.fromisoformat(r["finish_time"]) for r in reports)
    return sum(r["response_received_count"] for r in reports) / (finish - start).total_seconds()


def payload(i: int, base: str) -> str:
    return ('{"url":"%srelease/%07d-x","callback":"parse_product","errback":"on_error","headers":{},'
            '"body":"","cookies":{},"meta":{"recordhound_kind":"product"},"encoding":"utf-8","flags":[],'
            '"cb_kwargs":{},"dont_filter":false,"method":"GET","priority":10}' % (base, i))


def fill(backend: Any, count: int, base: str, batch: int = 10000) -> None:
    for start in range(0, count, batch):
        backend.commit([Entry(hashlib.sha1(b"%d" % i).digest()[:8], 10, payload(i, base))
                        for i in range(start, min(count, start + batch))], [], [])


def redis_bytes_per_seen(count: int) -> tuple[float, float]:
    client = redis.Redis.from_url(REDIS_URL)
    prefix = f"rhbench-{uuid.uuid4().hex[:8]}"
    ours = RedisFrontier(REDIS_URL, crawl_prefix(prefix, "seen"))
    ours.open()
    try:
        for start in range(0, count, 20000):
            entries = [Entry(hashlib.sha1(b"u%d" % i).digest()[:8], 0, "")
                       for i in range(start, min(count, start + 20000))]
            ours.commit(entries, [], [])
            client.delete(f"{ours.prefix}:queue", f"{ours.prefix}:payloads")  # keep only the seen-set
        pipe = client.pipeline(transaction=False)
        keys = list(client.scan_iter(match=f"{ours.prefix}:seen:*", count=5000))
        for key in keys:
            pipe.memory_usage(key, samples=0)
        ours_bytes = sum(pipe.execute())
        theirs = f"{prefix}:scrapy-redis-dupefilter"
        for start in range(0, count, 20000):
            client.sadd(theirs, *[hashlib.sha1(b"u%d" % i).hexdigest() for i in range(start, min(count, start + 20000))])
        theirs_bytes = client.memory_usage(theirs, samples=0)
    finally:
        ours.reset()
        client.delete(f"{prefix}:scrapy-redis-dupefilter")
        client.close()
    return ours_bytes / count, theirs_bytes / count


def first_request_seconds(shop: ShopProcess, work: Path, env: dict[str, str], *settings: str) -> tuple[float, int]:
    """Process start to the shop's next request; also the crawler's peak RSS (bytes) over 15 s."""
    args = [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo", "-a", f"base_url={shop.url}",
            *DISCARD, "-s", "CLOSESPIDER_TIMEOUT=15", *settings]
    before = shop.pages_served()
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=work, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    first, peak = 0.0, 0
    while process.poll() is None:
        if not first and shop.pages_served() > before:
            first = time.perf_counter() - started
        peak = max(peak, _rss(process.pid))
        time.sleep(0.01 if not first else 0.2)
    return first, peak


def open_seconds(backend: Any) -> float:
    """What a resuming node asks the frontier before its first request (the rest is Scrapy start-up)."""
    started = time.perf_counter()
    backend.counts()
    node, token = claim_node_id(backend, "", 60.0)
    backend.reclaim_node(node)
    backend.reclaim_expired()
    leased = backend.lease(node, 16, 60.0)
    elapsed = time.perf_counter() - started
    backend.release([entry.lease for entry in leased])
    backend.leave(node, token)
    return elapsed


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS"))
    except (OSError, StopIteration):
        return 0


def scale(shop: ShopProcess, work: Path, seen: int) -> list[tuple[str, str]]:
    rows = []
    env = {"REDIS_URL": REDIS_URL, "DATABASE_URL": f"sqlite:///{work / 'unused.sqlite3'}",
           "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}
    for size in (1000, seen):
        prefix = f"rhbench-{uuid.uuid4().hex[:8]}"
        backend = RedisFrontier(REDIS_URL, crawl_prefix(prefix, "demo"))
        backend.open()
        fill(backend, size, shop.url)
        backend.commit([], [], [], seeded=True)
        backend.set_status("running")
        opened = open_seconds(backend)
        try:
            seconds, peak = first_request_seconds(shop, work, env, "-s", f"RECORDHOUND_REDIS_PREFIX={prefix}")
        finally:
            backend.reset()
            backend.close()
        rows.append((f"redis, resume with {size:,} seen and queued: first request after",
                     f"{seconds:.2f} s from process start (frontier open + first lease "
                     f"{opened * 1000:.1f} ms); crawler RSS {peak / 2**20:.0f} MB"))
    path = work / "scale" / "frontier.sqlite3"
    backend = SqliteFrontier(str(path))
    backend.open()
    fill(backend, seen, shop.url)
    backend.commit([], [], [], seeded=True)
    backend.set_status("running")
    opened = open_seconds(backend)
    backend.close()
    env["REDIS_URL"] = ""
    seconds, peak = first_request_seconds(shop, work, env, "-s", f"JOBDIR={path.parent}")
    rows.append((f"embedded, resume with {seen:,} seen and queued: first request after",
                 f"{seconds:.2f} s from process start (frontier open + first lease {opened * 1000:.1f} ms); "
                 f"crawler RSS {peak / 2**20:.0f} MB; "
                 f"file {path.stat().st_size / seen:.0f} bytes per URL"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=5000)
    parser.add_argument("--seen", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    client = redis.Redis.from_url(REDIS_URL)
    with ShopProcess(args.releases, seed=13) as shop, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rates: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            prefix = f"rhbench-{uuid.uuid4().hex[:8]}"
            runs = {
                "stock Scrapy (in-memory scheduler)": lambda: crawl_rate(shop, work, *STOCK),
                "scrapy-redis 0.9.1": lambda: crawl_rate(shop, work, *scrapy_redis_settings(prefix)),
                "recordhound embedded": lambda: crawl_rate(shop, work, "-s", f"RECORDHOUND_CRAWL_ID={prefix}"),
                "recordhound redis, 1 node": lambda: crawl_rate(
                    shop, work, "-s", f"RECORDHOUND_REDIS_PREFIX={prefix}", redis_url=REDIS_URL),
                "recordhound redis, 2 nodes": lambda: two_nodes_rate(shop, work, prefix + "-2"),
            }
            for name, run in runs.items():
                rates.setdefault(name, []).append(run())
            for key in client.scan_iter(match=f"{prefix}*", count=1000):
                client.unlink(key)
        best = {name: max(values) for name, values in rates.items()}
        base = best["stock Scrapy (in-memory scheduler)"]
        rows = [("scheduler (best of %d)" % args.repeat, "pages/s", "ratio to stock")]
        rows += [(name, f"{rate:.0f}", f"{rate / base:.2f}x") for name, rate in best.items()]
        print(f"demo shop: {args.releases} releases; CONCURRENT_REQUESTS=32; items discarded; 2 cores shared "
              f"by the shop, Redis and the crawler(s)")
        print(table(rows))
        ours, theirs = redis_bytes_per_seen(args.seen)
        print(f"Redis bytes per seen URL at {args.seen:,}: recordhound {ours:.1f}, scrapy-redis set {theirs:.1f}")
        for label, figure in scale(shop, work, args.seen):
            print(f"{label}: {figure}")


if __name__ == "__main__":
    main()
