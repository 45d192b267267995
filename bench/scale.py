"""Bench: does the speed hold and the memory stay flat as the crawl grows? One crawl per mode per size.

    python bench/scale.py [--sizes 10000,100000] [--modes stock,embedded,...] [--slow-store 0.75/1]

For each size (demo shop releases; pages are ~1.1x releases) and mode: pages/s over the whole crawl
(x stock when stock ran at that size), CPU ms per page, pages/s in each tenth of the crawl (by pages
fetched) and the slowest of tenths 2-10 over the first (target >= 0.9), peak RSS of the crawler and of the
store's writer (sampled from /proc every 0.5 s), RSS growth after the first minute (target: within
10 %) beside the blocks Python's allocator holds for objects (``sys.getallocatedblocks``, once a second
in the crawler; the median of the crawl's last quarter over that of its second minute: flat while RSS
grows means no object is kept, the allocator keeps its high-water mark), and for the embedded frontier its file's bytes per seen URL. 1,000,000 is a valid size (it
takes hours on a small machine). ``--slow-store STALL/PERIOD`` reaches PostgreSQL through a proxy that
freezes for STALL of every PERIOD seconds (``bench/slowstore.py``): the memory check with a store
that cannot keep up; it applies to the PostgreSQL-store modes only. ``--store-delay SECONDS`` uses the
writer's own slowness knob instead (an error until recordhound has RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from bench.crawls import MODES, Bench, Run, parse_modes  # noqa: E402
from bench.slowstore import parse_slowness  # noqa: E402
from recordhound import settings as project_settings  # noqa: E402

FIRST_MINUTE = 60.0
HEARTBEAT_SECONDS = 30.0
STORE_DELAY = "RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS"
DEFAULT_MODES = "stock,embedded,redis1,embedded-sqlite,redis-postgresql"


def load() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


def _time_at(series: list[tuple[float, int]], pages: float) -> float:
    """When the crawl had fetched ``pages`` (linear between samples)."""
    for (t0, p0), (t1, p1) in zip(series, series[1:]):
        if p1 >= pages:
            return t1 if p1 == p0 else t0 + (t1 - t0) * (pages - p0) / (p1 - p0)
    return series[-1][0]


def tenths(run: Run) -> list[float]:
    """pages/s in each tenth of the crawl, by pages fetched (from the first fetched page)."""
    series = run.progress
    total = series[-1][1] if series else 0
    if total < 10:
        return []
    start = next((i for i, (_, pages) in enumerate(series) if pages > 0), 0)
    series = series[max(0, start - 1):]
    marks = [_time_at(series, total * k / 10) for k in range(11)]
    return [total / 10 / (b - a) if b > a else 0.0 for a, b in zip(marks, marks[1:])]


def blocks_growth(run: Run) -> str:
    """Python's allocated blocks in the last quarter of the crawl over the minute after the first (medians:
    the blocks rise and fall by a fifth with the pages in flight, where RSS only keeps its highest)."""
    end = run.blocks[-1][0] if run.blocks else 0.0
    early = [blocks for at, blocks in run.blocks if FIRST_MINUTE <= at < 2 * FIRST_MINUTE]
    late = [blocks for at, blocks in run.blocks if at >= max(2 * FIRST_MINUTE, end * 0.75)]
    if not early or not late:
        return "n/a (< 2 min)"
    return f"{(statistics.median(late) / statistics.median(early) - 1) * 100:+.0f} %"


def rss_growth(run: Run) -> str:
    """Crawler RSS: highest after the first minute over the RSS at one minute."""
    after = [crawler for at, crawler, _ in run.rss if at >= FIRST_MINUTE]
    if len(after) < 2:
        return "n/a (< 1 min)"
    return f"{(max(after) / after[0] - 1) * 100:+.0f} %"


def row(run: Run, stock: Run | None) -> tuple[str, ...]:
    parts = tenths(run)
    ratio = f" ({run.pages_per_second / stock.pages_per_second:.2f}x)" if stock and stock is not run else ""
    slowest = f"{min(parts[1:]) / parts[0]:.2f}" if parts and parts[0] else "-"  # the first holds the warm-up
    peak_crawler = max((crawler for _, crawler, _ in run.rss), default=0)
    peak_writer = max((writer for _, _, writer in run.rss), default=0)
    per_url = f"{run.frontier_bytes / run.seen:.0f}" if run.seen else "-"
    return (run.mode.label, f"{run.pages:,}", f"{run.pages_per_second:.0f}{ratio}", f"{run.cpu_ms_per_page:.2f}",
            " ".join(f"{p:.0f}" for p in parts), slowest, f"{peak_crawler / 2**20:.0f}",
            f"{peak_writer / 2**20:.0f}" if peak_writer else "-", rss_growth(run), blocks_growth(run), per_url)


HEADER = ("mode", "pages", "pages/s (x stock)", "CPU ms/page", "pages/s per tenth of the crawl",
          "slowest later tenth / first", "peak RSS MB", "writer MB", "RSS growth after 1 min",
          "Python blocks, last quarter / 2nd minute", "frontier bytes/URL")


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(f"error: --sizes {text!r}: expected comma-separated numbers of releases") from None
    if not sizes or min(sizes) < 10:
        raise SystemExit("error: --sizes: each size must be at least 10 releases")
    return sizes


def store_delay_settings(delay: float, names: list[str]) -> tuple[str, ...]:
    """The writer's own slowness knob, once the store has one (issue 24's back-pressure work)."""
    if not delay:
        return ()
    if not hasattr(project_settings, STORE_DELAY):
        raise SystemExit(f"error: --store-delay needs the setting {STORE_DELAY}, which this recordhound does "
                         "not have yet (back-pressure work); use --slow-store STALL/PERIOD meanwhile")
    if delay < 0 or not any(MODES[name].store for name in names):
        raise SystemExit("error: --store-delay must be positive and needs a mode with a store")
    return ("-s", f"{STORE_DELAY}={delay}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="demo shop releases, comma-separated")
    parser.add_argument("--modes", default=DEFAULT_MODES, help=f"comma-separated, from: {', '.join(MODES)}")
    parser.add_argument("--slow-store", default="", metavar="STALL/PERIOD",
                        help="PostgreSQL behind a proxy that freezes STALL of every PERIOD seconds")
    parser.add_argument("--store-delay", type=float, default=0.0, metavar="SECONDS",
                        help="the writer sleeps this long per item (RECORDHOUND_STORE_DELAY_PER_ITEM_SECONDS)")
    args = parser.parse_args()
    sizes, names = parse_sizes(args.sizes), parse_modes(args.modes)
    if args.slow_store:
        parse_slowness(args.slow_store)
        if not any(MODES[name].store == "postgresql" for name in names):
            raise SystemExit("error: --slow-store slows the PostgreSQL store: add redis-postgresql to --modes")
    settings = store_delay_settings(args.store_delay, names)
    print(f"load average at start: {load()} ({os.cpu_count()} CPUs)", flush=True)
    for size in sizes:
        runs: dict[str, Run] = {}
        with Bench(size, slow_store=args.slow_store, heartbeat_seconds=HEARTBEAT_SECONDS,
                   settings=settings) as bench:
            for name in names:
                print(f"{size:,} releases, {MODES[name].label}: crawling (load {load()})", flush=True)
                runs[name] = bench.run(MODES[name])
                run = runs[name]
                print(f"  {run.pages:,} pages in {run.seconds:.0f} s, {run.pages_per_second:.0f} pages/s "
                      f"(load {load()})", flush=True)
        slow = f"; PostgreSQL stalled {args.slow_store} s" if args.slow_store else ""
        slow += f"; writer delay {args.store_delay} s/item" if args.store_delay else ""
        print(f"\n{size:,} releases (one crawl per mode{slow}; load average at end: {load()})")
        print(table([HEADER, *(row(run, runs.get("stock")) for run in runs.values())]) + "\n", flush=True)


if __name__ == "__main__":
    main()
