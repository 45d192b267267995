"""Bench: how long a short crawl takes from start to exit, stock Scrapy against a recordhound node.

    python bench/startup.py [--rounds 8] [--pages 40] [--releases 2000]

Crawls the demo shop until ``CLOSESPIDER_PAGECOUNT=--pages`` in interleaved rounds: stock Scrapy
(``bench/stock_spider.py``), a node with the store off and a node with the store on (a SQLite product
database already at the schema's head, as on every crawl but a source's first; its writer process
counted). Each run is one process from start to exit, so the figures are start-up and leaving with a
few pages between: wall seconds and CPU seconds (rusage, children included), medians of the rounds,
and each as a ratio to stock's median.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.db.migrate import open_database  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STOCK_SPIDER = ROOT / "bench" / "stock_spider.py"
MODES = ("stock Scrapy", "node, store off", "node, store on (SQLite)")


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one run; a failed run stops the bench."""
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    assert process.stderr is not None
    errors = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[3]} exited {os.waitstatus_to_exitcode(status)}:\n{errors[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def commands(shop_url: str, work: Path, run: int, pages: int) -> dict[str, tuple[list[str], dict[str, str]]]:
    plain = {key: value for key, value in os.environ.items() if key != "SCRAPY_SETTINGS_MODULE"}
    plain["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), plain.get("PYTHONPATH", "")]))
    node = {**plain, "SCRAPY_SETTINGS_MODULE": "recordhound.settings", "REDIS_URL": "",
            "DATABASE_URL": f"sqlite:///{work / 'product.sqlite3'}"}
    common = ["-a", f"base_url={shop_url}", "-s", "LOG_LEVEL=WARNING", "-s", f"CLOSESPIDER_PAGECOUNT={pages}"]
    crawl = [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo", *common,
             "-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true", "-s", "RECORDHOUND_SUMMARY_ENABLED=false",
             "-s", f"RECORDHOUND_REVIEW_PATH={work / 'review.sqlite3'}"]
    return {
        MODES[0]: ([sys.executable, "-m", "scrapy", "runspider", str(STOCK_SPIDER), *common], plain),
        MODES[1]: ([*crawl, "-s", f"JOBDIR={work / f'off{run}'}", "-s", "RECORDHOUND_STORE_ENABLED=false"], node),
        MODES[2]: ([*crawl, "-s", f"JOBDIR={work / f'on{run}'}"], node),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--releases", type=int, default=2000)
    args = parser.parse_args()
    if args.rounds < 1 or args.pages < 1:
        parser.error("--rounds and --pages must be at least 1")
    runs: dict[str, list[tuple[float, float, int]]] = {mode: [] for mode in MODES}
    with ShopProcess(args.releases, seed=11) as shop, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        open_database(f"sqlite:///{work / 'product.sqlite3'}").dispose()  # at the head, as after a first crawl
        for round_ in range(args.rounds):
            planned = list(commands(shop.url, work, round_, args.pages).items())
            shift = round_ % len(planned)
            for mode, (command, env) in planned[shift:] + planned[:shift]:
                served = shop.pages_served()
                wall, cpu = timed(command, env, work)  # not in ROOT: its scrapy.cfg names recordhound's settings
                runs[mode].append((wall, cpu, shop.pages_served() - served))
            print(f"  round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    wall = {mode: statistics.median(w for w, _, _ in found) for mode, found in runs.items()}
    cpu = {mode: statistics.median(c for _, c, _ in found) for mode, found in runs.items()}
    rows = [("run", "pages (fewest)", "wall s (median)", "wall x stock", "CPU s (median)", "CPU x stock")]
    rows += [(mode, str(min(p for _, _, p in runs[mode])), f"{wall[mode]:.2f}", f"{wall[mode] / wall[MODES[0]]:.2f}",
              f"{cpu[mode]:.2f}", f"{cpu[mode] / cpu[MODES[0]]:.2f}") for mode in MODES]
    print(f"demo shop: {args.releases:,} releases; CLOSESPIDER_PAGECOUNT={args.pages}; {args.rounds} interleaved rounds")
    print(table(rows))


if __name__ == "__main__":
    main()
