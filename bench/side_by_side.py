"""Bench: stock Scrapy vs every recordhound mode, side by side, rounds interleaved.

    python bench/side_by_side.py [--releases 10000] [--rounds 3] [--modes stock,embedded,...] [--set NAME=VALUE]

One demo shop (pre-rendered pages from memory, asyncio, keep-alive) serves every run. Each round
runs stock Scrapy (``bench/stock_spider.py``: a plain spider, same Scrapy settings,
CONCURRENT_REQUESTS=32, CONCURRENT_ITEMS=8, items discarded) and each recordhound mode once (the
order rotates from round to round). Per run: pages/s (wall clock, start-up included) and CPU ms per
page (rusage of the node processes, the store's writer included); printed as ratios to the same
round's stock run, per round and the median of rounds, with the targets of issue 24: a node
>= 1.1x stock pages/s at <= 0.8x its CPU per page; two Redis nodes >= 1.9x one stock process.
Redis runs use a private redis-server (its CPU from INFO is printed apart); the PostgreSQL store
gets a database of its own on the local server.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from bench.crawls import MODES, Bench, Run, median, parse_modes  # noqa: E402

DEFAULT_MODES = ",".join(MODES)


def load() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


def progress(round_: int, rounds: int, run: Run) -> None:
    print(f"round {round_ + 1}/{rounds} {run.mode.label}: {run.pages:,} pages in {run.seconds:.1f} s, "
          f"{run.pages_per_second:.0f} pages/s, {run.cpu_ms_per_page:.2f} CPU ms/page (load {load()})",
          flush=True)


def target(name: str, speed: float, cpu: float) -> str:
    if name == "stock":
        return "baseline"
    if name == "redis2":
        return "met" if speed >= 1.9 else "not met (>= 1.9x stock pages/s)"
    missed = [text for ok, text in ((speed >= 1.1, ">= 1.1x pages/s"), (cpu <= 0.8, "<= 0.8x CPU/page")) if not ok]
    return "met" if not missed else "not met (" + ", ".join(missed) + ")"


def report(names: list[str], runs: dict[str, list[Run]]) -> list[tuple[str, ...]]:
    stock = runs["stock"]
    rows: list[tuple[str, ...]] = [("run", "pages/s x stock, per round", "x stock (median)", "CPU ms/page (median)",
             "CPU x stock, per round", "CPU x stock (median)", "Redis CPU ms/page", "target")]
    for name in names:
        speed = [run.pages_per_second / base.pages_per_second for run, base in zip(runs[name], stock)]
        cpu = [run.cpu_ms_per_page / base.cpu_ms_per_page for run, base in zip(runs[name], stock)]
        redis_ms = [run.redis_cpu_seconds * 1000 / run.pages for run in runs[name] if run.pages]
        rows.append((MODES[name].label, ", ".join(f"{s:.2f}" for s in speed), f"{median(speed):.2f}",
                     f"{median([run.cpu_ms_per_page for run in runs[name]]):.2f}",
                     ", ".join(f"{c:.2f}" for c in cpu), f"{median(cpu):.2f}",
                     f"{median(redis_ms):.2f}" if MODES[name].redis else "-",
                     target(name, median(speed), median(cpu))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=10_000, help="demo shop size (10,000: ~11.1k pages)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default=DEFAULT_MODES, help=f"comma-separated, from: {DEFAULT_MODES}")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a Scrapy setting for every run, stock Scrapy's included (repeatable)")
    args = parser.parse_args()
    if bad := [setting for setting in args.set if "=" not in setting.strip("=")]:
        raise SystemExit(f"error: --set {bad[0]!r}: expected NAME=VALUE")
    names = parse_modes(args.modes)
    if "stock" not in names:
        names.insert(0, "stock")
    if args.releases < 1 or args.rounds < 1:
        raise SystemExit("error: --releases and --rounds must be at least 1")
    runs: dict[str, list[Run]] = {name: [] for name in names}
    print(f"load average at start: {load()} ({os.cpu_count()} CPUs)", flush=True)
    with Bench(args.releases, shared=tuple(args.set)) as bench:
        for round_ in range(args.rounds):
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:
                run = bench.run(MODES[name])
                runs[name].append(run)
                progress(round_, args.rounds, run)
    pages = sorted({run.pages for results in runs.values() for run in results})
    print(f"\ndemo shop: {args.releases:,} releases, pages served per run: {', '.join(f'{p:,}' for p in pages)}; "
          f"CONCURRENT_REQUESTS=32, CONCURRENT_ITEMS=8{''.join(f', {s}' for s in args.set)}; "
          f"{args.rounds} interleaved rounds; "
          f"load average at end: {load()}")
    print(table(report(names, runs)))


if __name__ == "__main__":
    main()
