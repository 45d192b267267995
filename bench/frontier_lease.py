"""Bench: what rows waiting for their time cost leasing in the embedded frontier.

    python bench/frontier_lease.py [--waiting 100000] [--rounds 200]

Fills a frontier file with ``--waiting`` done requests scheduled for a recheck in an hour (a
following crawl), and a second one with as many retries waiting out a 10-minute backoff; then
times rounds of enqueue + lease + ack of 16 new requests, against the same rounds with 1,000
waiting rows (the baseline). Then the same rounds with ``--queued`` requests queued ahead of them
(a crawl whose queue is deep), against 1,000 queued: leasing must not walk the queue.
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
from recordhound.frontier.backend import Entry, Failure, Recheck  # noqa: E402
from recordhound.frontier.sqlite import SqliteFrontier  # noqa: E402


def _fp(text: str) -> bytes:
    return hashlib.sha1(text.encode(), usedforsecurity=False).digest()[:8]


def _timed_rounds(frontier: SqliteFrontier, rounds: int) -> float:
    """ms per round of enqueue + lease + ack of 16 new requests (the frontier is closed after)."""
    started = time.perf_counter()
    for r in range(rounds):
        frontier.commit([Entry(_fp(f"new{r}-{j}"), 0, f"n{r}-{j}") for j in range(16)], [], [])
        frontier.commit([], [x.lease for x in frontier.lease("node", 16, 600)], [])
    frontier.close()
    return (time.perf_counter() - started) / rounds * 1000


def ms_per_round(path: Path, waiting: int, kind: str, rounds: int) -> float:
    frontier = SqliteFrontier(str(path))
    frontier.open()
    frontier.commit([Entry(_fp(str(i)), 50, f"u{i}") for i in range(waiting)], [], [])
    leased = []
    while batch := frontier.lease("node", 5000, 600):
        leased += batch
    if kind == "rechecks":
        frontier.commit([], [], [], rechecks=[Recheck(x.lease, 3600, "{}") for x in leased])
    else:
        frontier.commit([], [], [Failure(x.lease, "http_503", retry_in=600) for x in leased])
    return _timed_rounds(frontier, rounds)


def ms_per_round_queued(path: Path, queued: int, rounds: int) -> float:
    frontier = SqliteFrontier(str(path))
    frontier.open()
    frontier.commit([Entry(_fp(str(i)), 0, f"u{i}") for i in range(queued)], [], [])
    return _timed_rounds(frontier, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiting", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--queued", type=int, default=100_000)
    args = parser.parse_args()
    rows = [("waiting rows", "ms per round (1,000: baseline)", f"ms per round ({args.waiting:,})", "ratio")]
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("rechecks", "retries"):
            base = ms_per_round(Path(tmp) / f"{kind}-base.sqlite3", 1000, kind, args.rounds)
            many = ms_per_round(Path(tmp) / f"{kind}-many.sqlite3", args.waiting, kind, args.rounds)
            rows.append((kind, f"{base:.2f}", f"{many:.2f}", f"{many / base:.2f}x"))
        base = ms_per_round_queued(Path(tmp) / "queued-base.sqlite3", 1000, args.rounds)
        many = ms_per_round_queued(Path(tmp) / "queued-many.sqlite3", args.queued, args.rounds)
        rows.append(("queued ahead", f"{base:.2f}", f"{many:.2f} ({args.queued:,} queued)", f"{many / base:.2f}x"))
    print(table(rows))


if __name__ == "__main__":
    main()
