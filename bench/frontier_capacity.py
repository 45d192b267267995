"""Bench: the frontier store's own ceiling, without HTTP: how many crawler nodes one Redis serves.

    python bench/frontier_capacity.py [--nodes 1,4,8] [--seconds 10] [--node-pages-per-second 300]

Simulated nodes (processes) run what a crawler node asks of the frontier per page, as fast as they
can: lease 16 → queue what the pages found (``--new`` unseen and ``--dupes`` already-seen requests per
page, realistic payloads) and ack the 16, in one ``commit``. Against one private redis-server (a
free port, nothing persisted) and against one embedded SQLite file (WAL) shared by the processes.
Printed per backend and node count: pages/s (acked leases) of all nodes together, Redis's CPU (from
``INFO cpu``) per wall second and per page, and the nodes' own CPU per page (for the embedded file,
which has no server, that is the store's whole cost). From these: how many crawler nodes at ``--node-pages-per-second`` (a node's measured rate,
e.g. from ``bench/side_by_side.py``) one Redis serves: by the measured ceiling (on a small machine
the simulated nodes compete with Redis for CPU, so this is a floor) and by Redis's CPU per page
(one core, Redis executes commands on one thread: the ceiling when clients have cores of their own).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from bench.common import redis_cpu, table  # noqa: E402
from recordhound.frontier.backend import Entry, FrontierBackend  # noqa: E402
from recordhound.frontier.redis import RedisFrontier  # noqa: E402
from recordhound.frontier.sqlite import SqliteFrontier  # noqa: E402
from recordhound.redis_client import crawl_prefix  # noqa: E402
from tests.redisserver import RedisServer  # noqa: E402

LEASE_COUNT = 16  # what the scheduler leases at a time
LEASE_SECONDS = 600.0
SEED_ENTRIES = 5000


class Figure(NamedTuple):
    nodes: int
    rate: float  # pages/s of all nodes together
    redis_cpu: float  # Redis CPU seconds per wall second (0 for the embedded store)
    node_cpu_ms: float  # the simulated nodes' CPU ms per page (the embedded store's whole cost)


def payload(key: str) -> str:
    return ('{"url":"http://127.0.0.1:8070/release/%s-a-title","callback":"parse_product","errback":"on_error",'
            '"headers":{},"body":"","cookies":{},"meta":{"recordhound_kind":"product"},"encoding":"utf-8",'
            '"flags":[],"cb_kwargs":{},"dont_filter":false,"method":"GET","priority":10}' % key)


def entry(key: str) -> Entry:
    return Entry(hashlib.sha1(key.encode(), usedforsecurity=False).digest()[:8], 10, payload(key))


def open_backend(kind: str, where: str) -> FrontierBackend:
    backend: FrontierBackend = (RedisFrontier(where, crawl_prefix("rhcapacity", "bench")) if kind == "redis"
                                else SqliteFrontier(where))
    backend.open()
    return backend


def node_loop(kind: str, where: str, node: str, new: int, dupes: int, ready: Any, start: Any,
              seconds: float, results: Any) -> None:
    """One simulated node: lease → enqueue what the pages found → ack, until ``seconds`` are up."""
    backend = open_backend(kind, where)
    name, pages, serial = f"sim-{node}", 0, 0  # node: unique per run, so its new requests are unseen
    ready.release()
    start.wait()
    cpu = time.process_time()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        leased = backend.lease(name, LEASE_COUNT, LEASE_SECONDS)
        found = []
        for _ in leased:
            found += [entry(f"n{node}-{serial + i}") for i in range(new)]
            found += [entry(f"seed-{(serial + i) % SEED_ENTRIES}") for i in range(dupes)]
            serial += max(new, dupes)
        backend.commit(found, [x.lease for x in leased], [])
        pages += len(leased)
    cpu = time.process_time() - cpu
    backend.close()
    results.put((pages, cpu))


def measure(kind: str, where: str, nodes: int, args: argparse.Namespace) -> Figure:
    """pages/s of all nodes, Redis CPU seconds per wall second, the nodes' CPU ms per page."""
    context = multiprocessing.get_context("spawn")
    ready, start, results = context.Semaphore(0), context.Event(), context.Queue()
    run = uuid.uuid4().hex[:8]
    workers = [context.Process(target=node_loop, args=(kind, where, f"{run}-{i}", args.new, args.dupes, ready, start,
                                                       args.seconds, results)) for i in range(nodes)]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.acquire()
    before = redis_cpu(where) if kind == "redis" else 0.0
    started = time.monotonic()
    start.set()
    reports = [results.get() for _ in workers]
    pages, node_cpu = sum(r[0] for r in reports), sum(r[1] for r in reports)
    elapsed = time.monotonic() - started
    cpu = (redis_cpu(where) - before) if kind == "redis" else 0.0
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise SystemExit(f"a simulated node exited {worker.exitcode}")
    return Figure(nodes, pages / elapsed, cpu / elapsed, node_cpu * 1000 / pages if pages else 0.0)


def seed(backend: FrontierBackend) -> None:
    backend.commit([entry(f"seed-{i}") for i in range(SEED_ENTRIES)], [], [], seeded=True)


def parse_nodes(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(f"error: --nodes {text!r}: expected comma-separated counts, e.g. 1,4,8") from None
    if not counts or min(counts) < 1:
        raise SystemExit("error: --nodes: every count must be at least 1")
    return counts


def run_backend(kind: str, where: str, counts: list[int], args: argparse.Namespace) -> list[Figure]:
    backend = open_backend(kind, where)
    seed(backend)
    backend.close()
    figures = []
    for nodes in counts:
        figure = measure(kind, where, nodes, args)
        figures.append(figure)
        print(f"{kind}, {nodes} simulated node(s): {figure.rate:.0f} pages/s"
              + (f", Redis CPU {figure.redis_cpu * 100:.0f} % of a core" if kind == "redis" else "")
              + f" (load {'%.2f %.2f %.2f' % os.getloadavg()})", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,4,8", help="simulated node counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each configuration runs")
    parser.add_argument("--new", type=int, default=1, help="unseen requests each page finds")
    parser.add_argument("--dupes", type=int, default=2, help="already-seen requests each page finds")
    parser.add_argument("--node-pages-per-second", type=float, default=300.0,
                        help="one crawler node's pages/s (measured by bench/side_by_side.py)")
    args = parser.parse_args()
    counts = parse_nodes(args.nodes)
    if args.seconds <= 0 or args.new < 0 or args.dupes < 0 or args.node_pages_per_second <= 0:
        raise SystemExit("error: --seconds and --node-pages-per-second must be positive, --new/--dupes >= 0")
    print(f"load average at start: {'%.2f %.2f %.2f' % os.getloadavg()} ({os.cpu_count()} CPUs)", flush=True)
    with tempfile.TemporaryDirectory(prefix="rhcapacity-") as tmp:
        server = RedisServer(Path(tmp) / "redis", "--save", "", "--appendonly", "no").start()
        try:
            results = {"Redis": run_backend("redis", server.url, counts, args)}
        finally:
            server.stop()
        results["embedded"] = run_backend("embedded", str(Path(tmp) / "frontier.sqlite3"), counts, args)
    print_report(results, args)


def print_report(results: dict[str, list[Figure]], args: argparse.Namespace) -> None:
    rows: list[tuple[str, ...]] = [("store", "simulated nodes", "pages/s (all nodes)", "Redis CPU (% of a core)",
                                    "Redis CPU ms/page", "nodes' CPU ms/page")]
    for store, figures in results.items():
        for f in figures:
            redis_side = store == "Redis" and f.rate
            rows.append((store, str(f.nodes), f"{f.rate:.0f}", f"{f.redis_cpu * 100:.0f}" if redis_side else "-",
                         f"{f.redis_cpu * 1000 / f.rate:.3f}" if redis_side else "-", f"{f.node_cpu_ms:.3f}"))
    print(f"\nper page: lease (16 at a time), {args.new} new + {args.dupes} seen requests queued, ack; "
          f"{args.seconds:.0f} s per configuration; load average at end: {'%.2f %.2f %.2f' % os.getloadavg()}")
    print(table(rows))
    nodes, ceiling, cpu, _ = max(results["Redis"], key=lambda figure: figure.rate)
    per_core = ceiling / cpu if cpu else 0.0
    print(f"\none Redis's measured ceiling: {ceiling:.0f} pages/s ({nodes} simulated nodes, Redis at "
          f"{cpu * 100:.0f} % of a core) = {ceiling / args.node_pages_per_second:.1f} crawler nodes at "
          f"{args.node_pages_per_second:.0f} pages/s each (a floor: the simulated nodes share the machine's cores)")
    print(f"by Redis's CPU per page: one saturated Redis core does {per_core:.0f} pages/s = "
          f"{per_core / args.node_pages_per_second:.1f} crawler nodes at {args.node_pages_per_second:.0f} pages/s")


if __name__ == "__main__":
    main()
