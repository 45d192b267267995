"""Chromium's memory over a 500-page rendered crawl of the demo shop's JavaScript section.

    python bench/render.py [--releases 480]

Samples the proportional set size (PSS, so pages shared between Chromium's processes count
once) of every Chromium process under the crawler, twice a second, against the pages the
shop has served. Baseline: the same crawl after its first 10 % of pages. "Flat" means the
peak / baseline ratio stays near 1.0: pages and contexts are closed after use and at most
RECORDHOUND_RENDER_MAX_PAGES are open. A second crawl with 4× the open pages shows what
the bound buys.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def chromium_pss(root: int) -> int:
    """Bytes of PSS of the Chromium processes descending from ``root``."""
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        todo += tree.get(pid, [])
        try:
            if "chrom" not in Path(f"/proc/{pid}/comm").read_text():
                continue
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def rendered_crawl(shop: ShopProcess, work: Path, max_pages: int) -> list[tuple[int, int]]:
    """(pages served, Chromium PSS) samples over one crawl."""
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
           "DATABASE_URL": f"sqlite:///{work / f'render-{max_pages}.sqlite3'}", "REDIS_URL": ""}
    start = shop.pages_served()
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo_js", "-a", f"base_url={shop.url}",
         "-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true", "-s", f"RECORDHOUND_RENDER_MAX_PAGES={max_pages}",
         "-s", f"RECORDHOUND_FRONTIER_DIR={work / f'frontier-{max_pages}'}", "-s", "LOG_LEVEL=WARNING",
         "-s", "RECORDHOUND_SUMMARY_ENABLED=false"],
        cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = []
    while process.poll() is None:
        pss = chromium_pss(process.pid)
        if pss:
            # the JS section costs 2 requests a page (the shell and its API call)
            samples.append(((shop.pages_served() - start) // 2, pss))
        time.sleep(0.5)
    if process.returncode != 0:
        raise SystemExit(f"the rendered crawl failed with exit code {process.returncode}")
    return samples


def at(samples: list[tuple[int, int]], fraction: float) -> int:
    pages = samples[-1][0]
    return next(pss for served, pss in samples if served >= fraction * pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=480, help="about 500 product pages")
    args = parser.parse_args()
    mib = 1024 * 1024
    with tempfile.TemporaryDirectory() as tmp, ShopProcess(args.releases, seed=9) as shop:
        rows = [("open pages", "pages", "PSS @10 %", "@25 %", "@50 %", "@75 %", "@100 %", "peak", "peak / @10 %")]
        for max_pages in (4, 16):
            samples = rendered_crawl(shop, Path(tmp), max_pages)
            base = at(samples, 0.10)
            points = [at(samples, f) for f in (0.10, 0.25, 0.50, 0.75)] + [samples[-1][1]]
            rows.append((str(max_pages), str(samples[-1][0]), *(f"{p / mib:.0f} MiB" for p in points),
                         f"{max(p for _, p in samples) / mib:.0f} MiB", f"{max(p for _, p in samples) / base:.2f}×"))
            print(table(rows[:1] + rows[-1:]) if max_pages == 4 else "", flush=True)
        print()
        print(table(rows))


if __name__ == "__main__":
    main()
