"""``python bench/torture.py --faults``: mixed fault classes against whole crawls (issue 20).

Each trial is a fresh crawl of the demo shop (its own folder, Redis prefix and PostgreSQL database
with a role of its own) hit by one fault at a random moment (seeded; the seed is printed and every
trial's fault is printed as it runs). Backends: "embedded" (one node, SQLite frontier) and "redis"
(two nodes; a private redis-server with RDB snapshots, reached through ``tests/faultproxy.py``).
After the fault, every node must be out within 30 s of the crawl's end ("stuck" otherwise: the
nodes are killed and one more node finishes the crawl, so the other counts still mean something);
then the product DB and the frontier are compared with the shop's truth (``truthcheck.tally``).
"""

from __future__ import annotations

import copy
import random
import signal
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench.common import table
from recordhound.demo.process import ShopProcess
from tests.faultproxy import BLACKHOLE, CUT, STALL, FaultProxy
from tests.integration.crawlers import Crawler, CrawlSetup, wait_nodes_out
from tests.integration.truthcheck import tally
from tests.redisserver import RedisServer
from tests.services import PostgresDatabase

LEASE_SECONDS = 5.0  # short, so a SIGSTOPped node's leases expire within a trial
NODE = (f"RECORDHOUND_FRONTIER_LEASE_SECONDS={LEASE_SECONDS}", "CONCURRENT_REQUESTS=4")
CLASSES = {"embedded": ("kill9", "sigterm", "sigstop", "pg_outage"),
           "redis": ("kill9", "sigterm", "sigstop", "redis_outage", "redis_lost_second", "pg_outage")}
KEYS = ("lost", "duplicated", "wrongly_failed", "stuck", "id_gaps", "verify_problems", "broken")
GRACE_SECONDS = 30.0


class TrialBroke(Exception):
    """A trial whose outcome cannot be checked; the message says what the nodes did."""


class FaultTrial:
    """One crawl, one fault."""

    def __init__(self, kind: str, shop: ShopProcess, folder: Path, rng: random.Random,
                 redis: RedisServer | None, proxy: FaultProxy | None, database: PostgresDatabase) -> None:
        self.kind, self.shop, self.rng, self.redis, self.proxy, self.database = kind, shop, rng, redis, proxy, database
        url = proxy.url() if proxy is not None else ""
        self.setup = CrawlSetup(folder, shop.url, database.url, url)
        self.direct = copy.copy(self.setup)  # the crawl seen without the proxy
        self.direct.redis_url = redis.url if redis is not None else ""
        self.nodes: list[Crawler] = []

    def start_nodes(self) -> None:
        count = 2 if self.redis is not None else 1
        self.nodes = [self.setup.start(*NODE, name=f"node{i}") for i in range(count)]

    def inject(self, fault: str) -> str:
        """Apply ``fault`` now; returns a description of what was done."""
        rng, node = self.rng, self.rng.randrange(len(self.nodes))
        if fault in ("kill9", "sigterm"):
            victim = self.nodes[node]
            if fault == "kill9":
                victim.kill()
            else:
                victim.signal(signal.SIGTERM)
                victim.wait(120)
            self.nodes[node] = self.setup.start(*NODE, name=f"node{node}")  # back again
            return f"{fault} node{node}"
        if fault == "sigstop":
            seconds = LEASE_SECONDS + rng.uniform(1, 3)
            self.nodes[node].signal(signal.SIGSTOP)
            time.sleep(seconds)
            self.nodes[node].signal(signal.SIGCONT)
            return f"sigstop node{node} {seconds:.1f} s"
        seconds = rng.uniform(0.5, 5.0)
        if fault == "redis_outage":
            assert self.proxy is not None
            how = rng.choice((CUT, STALL, BLACKHOLE))
            self.proxy.outage(how, seconds)
            return f"redis {how} {seconds:.1f} s"
        if fault == "redis_lost_second":
            assert self.redis is not None
            snapshot = self.setup.workdir / "snapshot.rdb"
            self.redis.snapshot(snapshot)
            time.sleep(1.0)
            self.redis.restore(snapshot)
            return "redis restored from a snapshot 1 s old"
        self.database.lock_out()
        time.sleep(seconds)
        self.database.let_in()
        return f"postgresql locked out {seconds:.1f} s"

    def _log_tails(self, lines: int = 3) -> str:
        """The last lines of each node's log: why a node left before the crawl had a schema."""
        tails = []
        for log in sorted(self.setup.workdir.glob("node*.log")):
            text = log.read_text(errors="replace").strip().splitlines()[-lines:]
            tails.append(f"{log.name}: " + " | ".join(text))
        return "; ".join(tails)

    def run(self, fault: str) -> tuple[str, dict[str, int]]:
        self.start_nodes()
        try:
            target, deadline = self.shop.pages_served() + self.rng.randint(3, 100), time.monotonic() + 120
            while (self.shop.pages_served() < target and time.monotonic() < deadline
                   and all(node.process.poll() is None for node in self.nodes)):
                time.sleep(0.05)  # the moment of the fault (or the crawl is over before it)
            what = self.inject(fault)
            codes, problem = wait_nodes_out(self.nodes, self.direct.counts, timeout=180, grace=GRACE_SECONDS)
            stuck = int(bool(problem) or any(code is None for code in codes))
            if stuck:
                what += f" -> STUCK ({problem}); finishing with one more node"
                rescue = self.setup.start(*NODE, name="rescue")
                rescue.wait_or_kill(300)
            try:
                found = tally(self.direct, self.shop.truth())
            except Exception as exc:  # noqa: BLE001 - said with what the nodes did, and counted
                raise TrialBroke(f"{type(exc).__name__}: {exc}; node exit codes {codes}; "
                                 f"{self._log_tails()}") from exc
            found["stuck"] = stuck
            return what, found
        finally:
            for node in self.nodes:
                node.ensure_stopped()
            self.database.let_in()


def run_backend(kind: str, trials: int, shop: ShopProcess, work: Path, rng: random.Random
                ) -> dict[str, Counter[str]]:
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    redis = RedisServer(work / f"redis-{kind}", "--save", "", "--appendonly", "no").start() \
        if kind == "redis" else None
    proxy = FaultProxy(redis.port).start() if redis is not None else None
    try:
        faults = [CLASSES[kind][i % len(CLASSES[kind])] for i in range(trials)]  # every class in turn
        rng.shuffle(faults)
        for trial, fault in enumerate(faults):
            folder = Path(tempfile.mkdtemp(dir=work))
            with PostgresDatabase(own_role=True) as database:
                one = FaultTrial(kind, shop, folder, rng, redis, proxy, database)
                try:
                    what, found = one.run(fault)
                except Exception as exc:  # noqa: BLE001 - a bench reports a broken trial and goes on
                    what, found = f"{fault}: the trial broke: {type(exc).__name__}: {exc}", Counter(broken=1)
                finally:
                    one.direct.cleanup()
            totals[fault].update(found)
            totals[fault]["trials"] += 1
            bad = {k: v for k, v in found.items() if v}
            print(f"  {kind} #{trial}: {what}: {bad or 'ok'}" + (f" ({folder})" if bad else ""), flush=True)
    finally:
        if proxy is not None:
            proxy.stop()
        if redis is not None:
            redis.kill()
    return totals


def run_faults(trials: int, releases: int, seed: int, backends: tuple[str, ...] = ("embedded", "redis")) -> None:
    print(f"seed {seed}; {trials} fault trials per backend; {releases} releases (shop latency 0.1 s)", flush=True)
    rows = [("backend", "fault", "trials", *KEYS, "time")]
    with ShopProcess(releases, seed=3, throttle=("--latency", "0.1")) as shop, \
            tempfile.TemporaryDirectory() as tmp:
        for kind in backends:
            started = time.monotonic()
            totals = run_backend(kind, trials, shop, Path(tmp), random.Random(f"{seed}:{kind}"))
            elapsed = f"{time.monotonic() - started:.0f} s"
            for fault in CLASSES[kind]:
                found = totals.get(fault, Counter())
                rows.append((kind, fault, str(found["trials"]), *(str(found[k]) for k in KEYS), elapsed))
    print(table(rows))
