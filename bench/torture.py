"""Torture: seeded random kill -9s, then every crash point, on both frontiers; lost / duplicated /
wrongly failed counts per backend (the target is 0 everywhere). Not run in CI.

    python bench/torture.py [--kills 50] [--releases 1000] [--seed S] [--database sqlite|postgresql]
    python bench/torture.py --faults [--trials 100] [--releases 120] [--seed S] [--backend embedded|redis]

``--faults``: mixed fault classes instead (issue 20), seeded trials per backend, each a fresh crawl
hit by one fault at a random moment: kill -9 (the node restarted), SIGTERM (restarted), SIGSTOP past
the lease time then SIGCONT, a Redis outage of 0.5-5 s through ``tests/faultproxy.py`` (cut, stall
or blackhole), Redis restored from a snapshot one second old, and a PostgreSQL outage of 0.5-5 s (the
crawl's role locked out). Printed per backend and fault class: lost, duplicated, wrongly failed,
stuck (a node not out within 30 s of the crawl's end, or a crawl that never drains).

Each round starts a crawl of the demo shop and SIGKILLs it after a random 0.5-6 s (the seed is
printed, so a failing run can be replayed); a crawl that completes is compared with the shop's
``/_truth.json`` (every offer field by field, extra rows, ID gaps, ``failed`` beyond the fault
pages, ``recordhound frontier verify``) and a fresh crawl begins. Then each crash point of
``recordhound/failpoints.py`` kills one crawl at its step, and the resumed crawl is compared.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402
from tests.integration.crawlers import CrawlSetup  # noqa: E402
from tests.integration.test_crash_points import POINTS, STORE  # noqa: E402
from tests.integration.truthcheck import tally  # noqa: E402
from tests.services import PostgresDatabase, redis_url  # noqa: E402

KEYS = ("lost", "duplicated", "wrongly_failed", "id_gaps", "verify_problems")


class Trial:
    """One backend's crawls against one shop, each in a fresh folder, Redis prefix and database."""

    def __init__(self, kind: str, shop: ShopProcess, work: Path, database: str) -> None:
        self.kind, self.shop, self.work, self.database = kind, shop, work, database
        self.totals: Counter[str] = Counter()
        self.crawls = 0

    def setup(self) -> tuple[CrawlSetup, PostgresDatabase | None]:
        folder = Path(tempfile.mkdtemp(dir=self.work))
        pg = PostgresDatabase() if self.database == "postgresql" else None
        url = pg.__enter__().url if pg else f"sqlite:///{folder / 'product.sqlite3'}"
        return CrawlSetup(folder, self.shop.url, url, redis_url() if self.kind == "redis" else ""), pg

    def check(self, setup: CrawlSetup, pg: PostgresDatabase | None) -> None:
        found = tally(setup, self.shop.truth())
        self.totals.update(found)
        self.crawls += 1
        if any(found.values()):
            print(f"  {self.kind}: crawl in {setup.workdir} is wrong: {found}", flush=True)
        setup.cleanup()
        if pg:
            pg.__exit__(None, None, None)

    def random_kills(self, kills: int, rng: random.Random) -> None:
        setup, pg = self.setup()
        done = 0
        while done < kills:
            crawler = setup.start(*STORE, name="torture")
            moment = rng.uniform(0.5, 6.0)  # start-up takes ~2 s: some kills land in it
            if crawler.wait_or_kill(moment):
                done += 1
                continue
            self.check(setup, pg)  # it completed before the kill
            setup, pg = self.setup()
        finish = setup.start(*STORE, name="final")
        assert finish.wait(600) == 0, f"the final crawl failed: {setup.workdir}"
        self.check(setup, pg)

    def crash_points(self) -> None:
        for point, nth in sorted(POINTS.items()):
            setup, pg = self.setup()
            crashed = setup.start(*STORE, name="crashed", failpoints=f"{point}=kill@{nth}")
            if crashed.wait(300) != -signal.SIGKILL:
                print(f"  {self.kind}: {point} was not reached", flush=True)
            resumed = setup.start(*STORE, name="resumed")
            assert resumed.wait(600) == 0, f"the resumed crawl failed: {setup.workdir}"
            self.check(setup, pg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50, help="random kills per backend")
    parser.add_argument("--releases", type=int, default=None, help="default 1000 (--faults: 120)")
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="postgresql")
    parser.add_argument("--faults", action="store_true", help="mixed fault classes (see above)")
    parser.add_argument("--trials", type=int, default=100, help="--faults: trials per backend")
    parser.add_argument("--backend", choices=("embedded", "redis"), default=None, help="--faults: only this one")
    args = parser.parse_args()
    if args.faults:
        from bench.torture_faults import run_faults

        run_faults(args.trials, args.releases or 120, args.seed,
                   (args.backend,) if args.backend else ("embedded", "redis"))
        return
    args.releases = args.releases or 1000
    print(f"seed {args.seed}; {args.kills} random kills per backend; {len(POINTS)} crash points; "
          f"{args.releases} releases; product DB {args.database}", flush=True)
    rows = []
    with ShopProcess(args.releases, seed=3) as shop, tempfile.TemporaryDirectory() as tmp:
        for kind in ("embedded", "redis"):
            started = time.monotonic()
            trial = Trial(kind, shop, Path(tmp), args.database)
            trial.random_kills(args.kills, random.Random(f"{args.seed}:{kind}"))
            trial.crash_points()
            rows.append((kind, f"{trial.crawls} crawls", *(str(trial.totals[k]) for k in KEYS),
                         f"{time.monotonic() - started:.0f} s"))
    print(table([("backend", "crawls checked", *KEYS, "time"), *rows]))


if __name__ == "__main__":
    main()
