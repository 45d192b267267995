"""Bench: job start-to-first-page latency, and what the job adds to a bare crawl.

    python bench/job_latency.py [--rounds 3] [--releases 40]

Per round: a demo shop on a free port, a fresh folder and SQLite product DB; a crawl job of the
bundled demo profile is queued and a `recordhound worker --once` started. Figures from the job's
own record: queued → claimed (the worker's start-up and first poll), claimed → first page done
(the crawl process's start-up, its first fetch, and the ack of that page). Baseline, same round:
`scrapy crawl catalog` started directly, process start → first page done (read the same way,
from the frontier's done count), so the difference is what a job costs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402

TRUST = ["-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true"]


def _env(folder: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": f"sqlite:///{folder}/product.sqlite3", "REDIS_URL": "",
            "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}


def _first_done(folder: str, timeout: float = 300) -> float:
    from recordhound.frontier.sqlite import SqliteFrontier

    path = Path(folder) / ".recordhound" / "frontier" / "demo.sqlite3"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            backend = SqliteFrontier(str(path), 5.0)
            try:
                backend.open()
                if backend.counts().done:
                    return time.time()
            except Exception:  # noqa: BLE001 - the crawl is still creating it
                pass
            finally:
                backend.close()
        time.sleep(0.05)
    raise SystemExit("no page was done in time")


def job_round(shop: ShopProcess) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        env, cli = _env(folder), [sys.executable, "-m", "recordhound"]
        subprocess.run([*cli, "job", "crawl", "demo", "--base-url", shop.url], cwd=folder, env=env, check=True,
                       capture_output=True)
        worker = subprocess.Popen([*cli, "worker", "--once", *TRUST], cwd=folder, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        worker.wait(600)

        listed = subprocess.run([*cli, "job", "list", "--json"], cwd=folder, env=env, check=True,
                                capture_output=True, text=True)
        job = json.loads(listed.stdout)[0]
        return job["started_at"] - job["created_at"], job["first_page_at"] - job["started_at"]


def bare_round(shop: ShopProcess) -> float:
    with tempfile.TemporaryDirectory() as folder:
        started = time.time()
        crawl = subprocess.Popen([sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo",
                                  "-a", f"base_url={shop.url}", *TRUST, "-s", "LOG_LEVEL=WARNING"],
                                 cwd=folder, env=_env(folder), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        first = _first_done(folder)
        crawl.wait(600)
        return first - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--releases", type=int, default=40)
    args = parser.parse_args()
    claimed, first, bare = [], [], []
    with ShopProcess(args.releases) as shop:
        for _ in range(args.rounds):
            to_claim, to_page = job_round(shop)
            claimed.append(to_claim)
            first.append(to_page)
            bare.append(bare_round(shop))
    med = statistics.median
    print(table([(f"measure (median of {args.rounds} rounds, seconds)", "value"),
                 ("job queued → claimed by a starting worker", f"{med(claimed):.2f}"),
                 ("job claimed → first page done (start-to-first-page)", f"{med(first):.2f}"),
                 ("bare `scrapy crawl` start → first page done (baseline)", f"{med(bare):.2f}"),
                 ("job overhead over the baseline", f"{med(first) - med(bare):+.2f}")]))


if __name__ == "__main__":
    main()
