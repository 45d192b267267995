"""Clearing the review queue in bulk: the scripted reviewer's decisions per minute in the admin,
and `review approve --all` in one process against one process per name (the baseline).

    python bench/review_bulk.py [--sample 20]

1. The demo's 1,000-name backlog (``recordhound/demo/backlog.py``: spelling variants of a
   1,500-release catalog's artists and labels, and new names) is parked in an embedded queue
   over a SQLite product DB; the scripted reviewer of ``tests/integration/scripted_reviewer.py``
   clears it in the admin in headless Chromium (bulk merge into the top suggestion, the
   keyboard, the merge search, "approve all of this source with no suggestion"). Printed: the
   time until every name is decided, decisions per minute, and the time until the admin's apply
   worker has written them all.
2. 1,000 unknown artists are parked; ``--sample`` of them are approved one per process
   (`recordhound review approve ID --apply`, the way a script had to before), extrapolated to
   1,000; the rest with one `recordhound review approve --all --type artist --apply`.
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

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.common import table  # noqa: E402
from recordhound.demo.backlog import RELEASES_FOR_BACKLOG  # noqa: E402
from recordhound.demo.catalog import Catalog  # noqa: E402
from recordhound.items import Release  # noqa: E402
from tests.integration.admin_server import admin_server  # noqa: E402
from tests.integration.review_env import ReviewEnv, review_env  # noqa: E402
from tests.integration.scripted_reviewer import catalog_vs_truth, clear, log_in, park_backlog, wait_applied  # noqa: E402


def scripted_reviewer(workdir: Path) -> tuple[int, float, float, dict[str, int], bool]:
    with review_env("embedded", workdir) as env:
        backlog = park_backlog(env, Catalog(RELEASES_FOR_BACKLOG))
        names = len(env.queue.entries())
        with admin_server(env, workdir, apply=True) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                                 args=["--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            log_in(page, base)
            started = time.monotonic()
            used = clear(page, base, env, backlog)
            decided = time.monotonic() - started
            wait_applied(env)
            applied = time.monotonic() - started
            browser.close()
        found, expected = catalog_vs_truth(env, backlog)
        return names, decided, applied, dict(used), found == expected


def cli(env: ReviewEnv, workdir: Path, *args: str) -> float:
    settings = [arg for pair in env.settings() for arg in ("-s", pair)]
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "recordhound", "review", *settings, *args], cwd=workdir, check=True,
                   capture_output=True, env={**os.environ, "DATABASE_URL": env.database_url, "REDIS_URL": ""})
    return time.monotonic() - started


def one_process(workdir: Path, sample: int) -> tuple[float, float, int]:
    with review_env("embedded", workdir) as env:
        env.seed("label", "Bench Label")
        env.writer().write(env.source(), [Release(
            source="demo", url=f"http://127.0.0.1/release/b{i}", external_id=f"b{i}", title=f"Bench {i}",
            artists=[f"Bench Artist {i:04d}"], label="Bench Label", styles=[], price=None, currency=None)
            for i in range(1000)])
        ids = [e["id"] for e in env.queue.entries("artist")]
        each = sum(cli(env, workdir, "approve", str(i), "--apply") for i in ids[:sample]) / sample
        rest = cli(env, workdir, "approve", "--all", "--type", "artist", "--apply")
        return each * 1000, rest, len(ids) - sample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=20, help="names approved one process each (baseline)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        names, decided, applied, used, right = scripted_reviewer(Path(first))
        per_name, bulk, rest = one_process(Path(second), args.sample)
    print(f"scripted reviewer, {names} names: all decided in {decided:.0f} s ({names / decided * 60:,.0f} "
          f"decisions/min), all applied by the admin's worker after {applied:.0f} s; catalog equals the truth: {right}")
    print("  decided by: " + ", ".join(f"{how} {count}" for how, count in sorted(used.items(), key=lambda u: -u[1])))
    print(table([("approving 1,000 artists from a script", "seconds", "ratio"),
                 (f"one process per name (baseline, {args.sample} timed)", f"{per_name:.0f}", "1.0"),
                 (f"one process for all ({rest} names)", f"{bulk / rest * 1000:.1f}", f"{per_name / (bulk / rest * 1000):.0f}x")]))


if __name__ == "__main__":
    main()
