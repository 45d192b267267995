"""Bench: what suspects queued ahead cost a node that leases fresh pages only (one is being tried).

    python bench/suspects_lease.py [--suspects 1000] [--queued 20000] [--rounds 50]

A frontier of ``--queued`` requests; a node leases ``--suspects`` of them and dies (``reclaim_node``):
they are suspects, at the head of the queue. Then rounds of lease 16 + release, once taking any
entry and once fresh pages only (what a node trying a suspect asks for: the backend skips the
suspects ahead), on the embedded file and on a private redis-server. Prints ms per round.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.frontier.backend import Entry, FrontierBackend  # noqa: E402
from recordhound.frontier.redis import RedisFrontier  # noqa: E402
from recordhound.frontier.sqlite import SqliteFrontier  # noqa: E402
from tests.redisserver import RedisServer  # noqa: E402


def rounds(backend: FrontierBackend, args: argparse.Namespace) -> list[str]:
    """Per mode (any entry, fresh only): ms per round of lease 16 + release and the suspects leased,
    the suspects queued ahead."""
    backend.commit([Entry(hashlib.sha1(b"%d" % i, usedforsecurity=False).digest()[:8], 0, f"u{i}")
                    for i in range(args.queued)], [], [])
    while backend.counts().leased_total < args.suspects:
        backend.lease("dead", min(500, args.suspects - backend.counts().leased_total), 600)
    backend.reclaim_node("dead")
    cells = []
    for fresh in (False, True):
        taken = 0
        started = time.perf_counter()
        for _ in range(args.rounds):
            leased = backend.lease("node", 16, 600, fresh_only=fresh)
            taken += sum(1 for x in leased if x.lost)
            backend.release([x.lease for x in leased])
        cells.append(f"{(time.perf_counter() - started) / args.rounds * 1000:.2f} ({taken:,} suspects leased)")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suspects", type=int, default=1000)
    parser.add_argument("--queued", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    if not 0 < args.suspects < args.queued:
        raise SystemExit("error: --suspects must be above 0 and below --queued")
    rows = [("store", "ms per lease of 16 + release: any entry", f"fresh only ({args.suspects:,} suspects ahead)")]
    with tempfile.TemporaryDirectory() as tmp:
        embedded = SqliteFrontier(str(Path(tmp) / "frontier.sqlite3"))
        embedded.open()
        rows.append(("embedded", *rounds(embedded, args)))
        embedded.close()
        server = RedisServer(Path(tmp) / "redis", "--save", "", "--appendonly", "no").start()
        try:
            shared = RedisFrontier(server.url, "rhbench")
            shared.open()
            rows.append(("Redis", *rounds(shared, args)))
        finally:
            server.stop()
    print(table(rows))


if __name__ == "__main__":
    main()
