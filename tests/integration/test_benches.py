"""The crawl benches run end to end at tiny sizes and print their tables (outcomes, never timings)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.services import crawl_env

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def bench(script: str, *args: str) -> str:
    env = crawl_env()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_side_by_side_counts_every_page_of_the_shop_in_each_run() -> None:
    out = bench("side_by_side.py", "--releases", "20", "--rounds", "1", "--modes", "stock,embedded")
    served = re.search(r"pages served per run: ([\d, ]+);", out)
    assert served, out
    pages = {int(p.replace(",", "")) for p in served.group(1).split(", ")}
    assert min(pages) >= 20 and max(pages) - min(pages) <= 1, out  # 20 product pages, listings, fault links
    assert re.search(r"^stock Scrapy\s+1\.00\s", out, re.M) and re.search(r"^embedded\s+\d", out, re.M), out


def test_side_by_side_gives_a_set_setting_to_every_run_stock_included() -> None:
    out = bench("side_by_side.py", "--releases", "20", "--rounds", "1", "--modes", "stock,embedded",
                "--set", "CLOSESPIDER_PAGECOUNT=1")  # each run stops after its first page: none crawls the shop
    served = re.search(r"pages served per run: ([\d, ]+);", out)
    assert served and "CLOSESPIDER_PAGECOUNT=1" in out, out
    assert max(int(p.replace(",", "")) for p in served.group(1).split(", ")) < 20, out
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "side_by_side.py"), "--set", "LOG_LEVEL"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0 and "NAME=VALUE" in done.stderr


def test_scale_prints_tenths_rss_and_frontier_bytes_per_url() -> None:
    out = bench("scale.py", "--sizes", "40", "--modes", "embedded-sqlite")
    line = next(line for line in out.splitlines() if line.startswith("embedded + SQLite store"))
    cells = re.split(r"\s{2,}", line.strip())
    assert int(cells[1]) >= 40, out  # pages: every product page and the listings
    assert len(cells[4].split()) == 10, out  # pages/s per tenth of the crawl
    assert int(cells[-1]) > 0, out  # frontier bytes per seen URL


def test_frontier_capacity_prints_both_stores_and_one_redis_ceiling() -> None:
    out = bench("frontier_capacity.py", "--nodes", "1", "--seconds", "1")
    assert re.search(r"^Redis\s+1\s+\d+", out, re.M) and re.search(r"^embedded\s+1\s+\d+", out, re.M), out
    assert "one Redis's measured ceiling:" in out, out


def test_suspects_lease_skips_the_suspects_only_when_asked_for_fresh_pages_on_both_stores() -> None:
    out = bench("suspects_lease.py", "--suspects", "20", "--queued", "60", "--rounds", "2")
    for store in ("embedded", "Redis"):
        line = next(line for line in out.splitlines() if line.startswith(store))
        assert re.search(r"\(32 suspects leased\)\s+[\d.]+ \(0 suspects leased\)", line), out


def test_a_user_error_is_one_line_and_a_failure() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--modes", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0 and "accepted:" in done.stderr


def test_startup_runs_stock_and_both_nodes_to_their_page_count() -> None:
    out = bench("startup.py", "--rounds", "1", "--pages", "5", "--releases", "20")
    for mode in ("stock Scrapy", "node, store off", "node, store on (SQLite)"):
        line = next(line for line in out.splitlines() if line.startswith(mode))
        cells = re.split(r"\s{2,}", line.strip())
        assert int(cells[1]) >= 5 and float(cells[2]) > 0, out  # CLOSESPIDER_PAGECOUNT=5 reached
