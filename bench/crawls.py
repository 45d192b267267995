"""Crawl runs for the side-by-side and scale benches: stock Scrapy and every recordhound mode
against one demo shop, each run measured the same way.

A run starts its node(s) as subprocesses and, while they run, samples each node's RSS and its
descendants' (the store's writer) from /proc; when a node exits, ``os.wait4`` gives its CPU time,
children included (Linux adds a reaped child's time to its parent's). Pages are what the shop
served for shop pages during the run (robots.txt and the shop's control endpoints not counted);
seconds are wall-clock from starting the first node to the last node's exit (start-up included,
as a user timing a crawl sees it). ``bench.progress`` writes each node's responses per second,
for pages/s per slice of the crawl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from bench.common import redis_cpu
from bench.slowstore import slow_database_url
from recordhound import settings as project_settings
from recordhound.demo.process import ShopProcess
from recordhound.frontier.sqlite import SqliteFrontier
from tests.redisserver import RedisServer
from tests.services import TRUSTED, PostgresDatabase

ROOT = Path(__file__).resolve().parents[1]  # bench.progress must import in the crawl processes
STOCK_SPIDER = Path(__file__).with_name("stock_spider.py")
# what a user runs: the ``scrapy`` console script beside this Python (a process's ``__main__`` is what
# multiprocessing's spawn runs again in a child, so ``python -m scrapy`` would not show its cost)
_CONSOLE = Path(sys.executable).with_name("scrapy")
SCRAPY = [str(_CONSOLE)] if _CONSOLE.exists() else [sys.executable, "-m", "scrapy"]
PROGRESS = {"bench.progress.BenchProgress": 900}
SAMPLE_SECONDS = 0.5


@dataclass(frozen=True)
class Mode:
    label: str
    stock: bool = False
    nodes: int = 1
    redis: bool = False
    store: str = ""  # "" (items discarded), "sqlite" or "postgresql"


MODES = {
    "stock": Mode("stock Scrapy", stock=True),
    "embedded": Mode("embedded"),
    "redis1": Mode("Redis, 1 node", redis=True),
    "redis2": Mode("Redis, 2 nodes", nodes=2, redis=True),
    "embedded-sqlite": Mode("embedded + SQLite store", store="sqlite"),
    "redis-postgresql": Mode("Redis + PostgreSQL store", redis=True, store="postgresql"),
}


@dataclass
class Run:
    mode: Mode
    pages: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the nodes' user + system time, their children (the writer) included
    redis_cpu_seconds: float = 0.0  # the private Redis server's, from INFO cpu
    progress: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, pages, all nodes)
    rss: list[tuple[float, int, int]] = field(default_factory=list)  # (seconds, crawler bytes, writer bytes)
    blocks: list[tuple[float, int]] = field(default_factory=list)  # (seconds, Python blocks allocated in node 0)
    frontier_bytes: int = 0  # the embedded file (and its WAL) at the end
    seen: int = 0  # URLs the embedded frontier marked seen

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return self.cpu_seconds * 1000 / self.pages if self.pages else 0.0


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS"))
    except (OSError, StopIteration, ValueError):
        return 0


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as children:
                    kids = [int(k) for k in children.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


class Bench:
    """One demo shop, one private Redis server (started when a mode needs it), one work folder."""

    def __init__(self, releases: int, seed: int = 17, slow_store: str = "", heartbeat_seconds: float = 0.0,
                 settings: tuple[str, ...] = (), shared: tuple[str, ...] = ()) -> None:
        self.releases, self.seed = releases, seed
        self.sqlite_store = ""  # one SQLite product database for every run with that store ("": a new one each)
        self.settings = settings  # more "-s NAME=VALUE" for the recordhound nodes
        self.shared = shared  # "-s NAME=VALUE" for every run, stock Scrapy's included (the same settings)
        self.heartbeat_seconds = heartbeat_seconds  # print a progress line this often during a run (0: never)
        self.slow_store = slow_store  # "STALL/PERIOD" seconds: PostgreSQL reached through a stalling proxy
        self.shop = ShopProcess(releases, seed=seed)
        self._tmp = tempfile.TemporaryDirectory(prefix="rhbench-")
        self.work = Path(self._tmp.name)
        self._redis: RedisServer | None = None

    def __enter__(self) -> Bench:
        self.shop.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._redis is not None:
            self._redis.stop()
        self.shop.stop()
        self._tmp.cleanup()

    def redis_url(self) -> str:
        if self._redis is None:
            self._redis = RedisServer(self.work / "redis", "--save", "", "--appendonly", "no").start()
        return self._redis.url

    def run(self, mode: Mode) -> Run:
        if mode.store != "postgresql":
            return self._run(mode, self.sqlite_store or f"sqlite:///{self.work / f'store-{uuid.uuid4().hex[:8]}.sqlite3'}")
        with PostgresDatabase() as database:
            if not self.slow_store:
                return self._run(mode, database.url)
            with slow_database_url(database.url, self.slow_store) as url:
                return self._run(mode, url)

    def _run(self, mode: Mode, database_url: str) -> Run:
        folder = self.work / f"run-{uuid.uuid4().hex[:8]}"
        folder.mkdir()
        redis_url = self.redis_url() if mode.redis else ""
        prefix = f"rhbench-{uuid.uuid4().hex[:8]}"
        redis_before = redis_cpu(redis_url) if redis_url else 0.0
        served_before = self.shop.pages_served()
        commands = [self._command(mode, folder, node, prefix) for node in range(mode.nodes)]
        env = self._env(mode, database_url, redis_url)
        run = Run(mode)
        started = time.time()
        nodes = [subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL,
                                  stderr=open(folder / f"node{i}.log", "wb"))
                 for i, command in enumerate(commands)]
        run.cpu_seconds = self._watch(nodes, run, started, folder)
        run.seconds = time.time() - started
        run.pages = self.shop.pages_served() - served_before
        if redis_url:
            run.redis_cpu_seconds = redis_cpu(redis_url) - redis_before
        run.progress = _merge_progress([folder / f"progress{i}.txt" for i in range(mode.nodes)], started)
        run.blocks = _blocks(folder / "progress0.txt", started)
        failed = [i for i, node in enumerate(nodes) if node.returncode != 0]
        if failed:
            tail = (folder / f"node{failed[0]}.log").read_text(errors="replace")[-3000:]
            raise SystemExit(f"{mode.label}: node {failed[0]} exited {nodes[failed[0]].returncode}:\n{tail}")
        self._frontier_size(run, folder / "job" / "frontier.sqlite3")
        return run

    def _command(self, mode: Mode, folder: Path, node: int, prefix: str) -> list[str]:
        common = ["-a", f"base_url={self.shop.url}", "-s", "LOG_LEVEL=WARNING",
                  "-s", f"BENCH_PROGRESS_FILE={folder / f'progress{node}.txt'}",
                  *(arg for setting in self.shared for arg in ("-s", setting))]
        if mode.stock:
            return [*SCRAPY, "runspider", str(STOCK_SPIDER), *common,
                    "-s", f"EXTENSIONS={json.dumps(PROGRESS)}"]
        extensions = {**project_settings.EXTENSIONS, **PROGRESS}
        command = [*SCRAPY, "crawl", "catalog", "-a", "source=demo", *common, *TRUSTED,
                   "-s", f"EXTENSIONS={json.dumps(extensions)}", "-s", "RECORDHOUND_SUMMARY_ENABLED=false",
                   *self.settings]
        if not mode.store:
            command += ["-s", "RECORDHOUND_STORE_ENABLED=false"]
        if mode.redis:
            command += ["-s", f"RECORDHOUND_REDIS_PREFIX={prefix}"]
        else:
            command += ["-s", f"JOBDIR={folder / 'job'}"]
        return command

    def _env(self, mode: Mode, database_url: str, redis_url: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key != "SCRAPY_SETTINGS_MODULE"}
        env["REDIS_URL"] = redis_url
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        if not mode.stock:
            env.update(SCRAPY_SETTINGS_MODULE="recordhound.settings", DATABASE_URL=database_url)
        return env

    def _watch(self, nodes: list[subprocess.Popen[bytes]], run: Run, started: float, folder: Path) -> float:
        """Sample RSS until every node has exited; returns their CPU seconds (children included)."""
        cpu, running, next_sample = 0.0, list(nodes), 0.0
        next_beat = started + (self.heartbeat_seconds or float("inf"))
        while running:
            for node in list(running):
                pid, status, usage = os.wait4(node.pid, os.WNOHANG)
                if pid:
                    node.returncode = os.waitstatus_to_exitcode(status)
                    cpu += usage.ru_utime + usage.ru_stime
                    running.remove(node)
            now = time.time()
            if running and now >= next_sample:
                crawler = sum(_rss(node.pid) for node in running)
                writer = sum(_rss(kid) for node in running for kid in _descendants(node.pid))
                run.rss.append((now - started, crawler, writer))
                next_sample = now + SAMPLE_SECONDS
            if now >= next_beat:
                _heartbeat(run, folder, len(nodes))
                next_beat = now + self.heartbeat_seconds
            time.sleep(0.05)
        for node in nodes:
            if node.stderr is not None:
                node.stderr.close()
        return cpu

    @staticmethod
    def _frontier_size(run: Run, path: Path) -> None:
        if not path.exists():
            return
        run.frontier_bytes = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
        frontier = SqliteFrontier(str(path))
        frontier.open()
        try:
            run.seen = frontier.counts().seen
        finally:
            frontier.close()


def _heartbeat(run: Run, folder: Path, nodes: int) -> None:
    pages = 0
    for node in range(nodes):
        path = folder / f"progress{node}.txt"
        lines = path.read_text().splitlines() if path.exists() else []
        pages += int(lines[-1].split()[1]) if lines else 0
    at, crawler, writer = run.rss[-1] if run.rss else (0.0, 0, 0)
    print(f"  ... {at:.0f} s: {pages:,} pages, crawler RSS {crawler / 2**20:.0f} MB, writer {writer / 2**20:.0f} MB "
          f"(load {os.getloadavg()[0]:.2f})", flush=True)


def _blocks(path: Path, started: float) -> list[tuple[float, int]]:
    """One node's Python blocks allocated over the crawl: (seconds since start, blocks)."""
    if not path.exists():
        return []
    return [(float(stamp) - started, int(blocks)) for stamp, _, blocks in
            (line.split() for line in path.read_text().splitlines())]


def _merge_progress(paths: list[Path], started: float) -> list[tuple[float, int]]:
    """All nodes' samples as one series of (seconds since start, pages so far by every node)."""
    events: list[tuple[float, int, int]] = []
    for node, path in enumerate(paths):
        if path.exists():
            for line in path.read_text().splitlines():
                stamp, count, _ = line.split()
                events.append((float(stamp) - started, node, int(count)))
    latest: dict[int, int] = {}
    series = []
    for at, node, pages in sorted(events):
        latest[node] = pages
        series.append((at, sum(latest.values())))
    return series


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def parse_modes(text: str) -> list[str]:
    """Comma-separated mode names; a user error (one line, exit 2) names the accepted ones."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in MODES]
    if unknown or not names:
        raise SystemExit(f"error: unknown mode {', '.join(unknown) or '(none)'}; accepted: {', '.join(MODES)}")
    return names
