"""Crawler processes for the frontier tests: started, signalled and reaped by PID."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy

from recordhound.config import FrontierConfig
from recordhound.frontier.backend import Counts, FrontierBackend
from recordhound.frontier.politeness import holder_of
from recordhound.frontier.redis import RedisFrontier
from recordhound.frontier.sqlite import SqliteFrontier
from recordhound.redis_client import connect, crawl_prefix
from recordhound.review.docstore import RedisDocStore
from tests.services import TRUSTED, crawl_env


class CrawlSetup:
    """One crawl's environment: the shop, the product DB, and embedded or Redis frontier."""

    def __init__(self, workdir: Path, shop_url: str, database_url: str, redis_url: str = "") -> None:
        self.workdir, self.shop_url, self.database_url = workdir, shop_url, database_url
        self.redis_url = redis_url
        self.prefix = f"rhtest-{uuid.uuid4().hex[:10]}"

    def env(self) -> dict[str, str]:
        return crawl_env(DATABASE_URL=self.database_url, REDIS_URL=self.redis_url)

    def start(self, *settings: str, name: str = "crawl", failpoints: str = "", trusted: bool = True,
              session: bool = False, program: tuple[str, ...] = (sys.executable, "-m", "scrapy")) -> Crawler:
        """``session``: the crawler leads a process group of its own (``Crawler.signal_group``: a terminal's Ctrl-C);
        ``program``: what runs ``crawl catalog ...`` (``python -m scrapy``, or the ``scrapy`` console script)."""
        stats = self.workdir / f"{name}-{uuid.uuid4().hex[:6]}.json"
        log = open(self.workdir / f"{name}.log", "a")  # noqa: SIM115 - closed by Crawler.wait
        args = [*program, "crawl", "catalog", "-a", "source=demo",
                "-a", f"base_url={self.shop_url}", "-s", f"RECORDHOUND_STATS_FILE={stats}",
                "-s", "LOG_LEVEL=INFO", "-s", "RECORDHOUND_SUMMARY_ENABLED=false",
                "-s", f"RECORDHOUND_REDIS_PREFIX={self.prefix}", *(TRUSTED if trusted else ())]
        for setting in settings:
            args += ["-s", setting]
        env = {**self.env(), "RECORDHOUND_FAILPOINTS": failpoints}
        process = subprocess.Popen(args, cwd=self.workdir, env=env, stdout=log, stderr=log, start_new_session=session)
        return Crawler(process, stats, log)

    def log(self, name: str) -> str:
        """The whole log of the crawler started as ``name``."""
        return (self.workdir / f"{name}.log").read_text()

    def backend(self) -> FrontierBackend:
        if self.redis_url:
            backend: FrontierBackend = RedisFrontier(self.redis_url, crawl_prefix(self.prefix, "demo"))
        else:
            backend = SqliteFrontier(str(self.workdir / ".recordhound" / "frontier" / "demo.sqlite3"))
        backend.open()
        return backend

    def frontier_config(self) -> FrontierConfig:
        """The crawl's frontier as the crawler processes see it (for ``frontier verify``)."""
        from dataclasses import replace

        from scrapy.settings import Settings

        settings = Settings()
        settings.setmodule("recordhound.settings")
        settings.set("RECORDHOUND_FRONTIER_DIR", str(self.workdir / ".recordhound" / "frontier"))
        settings.set("RECORDHOUND_REDIS_PREFIX", self.prefix)
        return replace(FrontierConfig.from_settings(settings), redis_url=self.redis_url)

    def counts(self) -> Counts:
        backend = self.backend()
        try:
            return backend.counts()
        finally:
            backend.close()

    def slots_held(self) -> dict[str, int]:
        """Politeness slots held in Redis now, per holder ("crawl:node")."""
        client = connect(self.redis_url)
        try:
            held: dict[str, int] = {}
            for key in client.scan_iter(match=f"{self.prefix}:hosts:*:slots", count=1000):
                for slot in client.zrange(key, 0, -1):
                    holder = holder_of(slot.decode())
                    held[holder] = held.get(holder, 0) + 1
            return held
        finally:
            client.close()

    def cleanup(self) -> None:
        if self.redis_url:
            backend = self.backend()
            backend.reset()
            backend.close()
            queue = RedisDocStore(self.redis_url, self.prefix)
            queue.drop()
            queue.close()
            client = connect(self.redis_url)  # the per-host politeness state
            for key in client.scan_iter(match=f"{self.prefix}:hosts:*", count=1000):
                client.unlink(key)
            client.close()


def children_of(pid: int, command: str = "") -> list[int]:
    """The processes whose parent is ``pid`` (whose command line holds ``command``, if given)."""
    found = subprocess.run(["pgrep", "-P", str(pid), *(("-f", command) if command else ())],
                           capture_output=True, text=True)
    return [int(child) for child in found.stdout.split()]


class Crawler:
    def __init__(self, process: subprocess.Popen[bytes], stats: Path, log: Any) -> None:
        self.process, self.stats_path, self.log = process, stats, log

    def children(self) -> list[int]:
        return children_of(self.process.pid)

    def kill(self) -> list[int]:
        """SIGKILL the crawler; returns its children that are still alive 10 s later."""
        children = self.children()
        self.process.send_signal(signal.SIGKILL)
        self.wait(30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{c}") for c in children):
            time.sleep(0.2)
        return [c for c in children if os.path.exists(f"/proc/{c}")]

    def wait_or_kill(self, seconds: float) -> bool:
        """SIGKILL the crawler after ``seconds`` unless it exits first; True if it was killed."""
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            return True
        self.log.close()
        return False

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def signal_group(self, signum: int) -> None:
        """To the crawler and its children at once, as a terminal's Ctrl-C (started with ``session``)."""
        assert os.getpgid(self.process.pid) == self.process.pid, "not started with session=True"
        os.killpg(self.process.pid, signum)

    def frozen(self) -> bool:
        """Stopped by SIGSTOP (a ``stop`` crash point)."""
        return is_stopped(self.process.pid)

    def wait_frozen(self, timeout: float = 180) -> None:
        """Until the crawler froze itself at its ``stop`` crash point (fails if it exits or takes too long)."""
        deadline = time.monotonic() + timeout
        while not self.frozen():
            assert self.process.poll() is None, f"exited with {self.process.returncode} before its crash point"
            assert time.monotonic() < deadline, f"did not reach its crash point in {timeout} s"
            time.sleep(0.05)

    def wait(self, timeout: float = 300) -> int:
        try:
            return self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is not None:
                self.log.close()

    def stats(self) -> dict[str, Any]:
        if not self.stats_path.exists():
            return {}
        return json.loads(self.stats_path.read_text())["stats"]  # type: ignore[no-any-return]

    def ensure_stopped(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.log.close()


def kill_group_if_running(process: subprocess.Popen[Any]) -> None:
    """A test's cleanup of a process started in a session of its own: its whole group killed."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def process_state(pid: int) -> str | None:
    """Process ``pid``'s state letter in ``/proc`` ("T" stopped, "Z" a zombie, ...); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def is_stopped(pid: int) -> bool:
    """Process ``pid`` is stopped by SIGSTOP (a ``stop`` crash point)."""
    return process_state(pid) == "T"


def wait_nodes_out(nodes: list[Crawler], counts: Any, timeout: float = 240,
                   grace: float = 30) -> tuple[list[int | None], str]:
    """Watch ``nodes`` until the crawl drains (``counts()``, read beside the nodes' own path to the
    store) and every node has exited, or a node is still running ``grace`` seconds after the drain,
    or ``timeout`` passes. Returns (exit codes, None for a node still running, which is then
    killed; and what went wrong, "" when every node was out in time)."""
    started = time.monotonic()
    drained_at: float | None = None
    problem = ""
    while any(node.process.poll() is None for node in nodes):
        now = time.monotonic()
        if drained_at is None:
            try:
                found = counts()
                if found.drained and found.status != "resetting":
                    drained_at = now
            except Exception:  # noqa: BLE001 - the store may be the thing that is down
                pass
        if drained_at is not None and now - drained_at > grace:
            problem = f"a node was still running {grace:.0f} s after the crawl drained"
            break
        if now - started > timeout:
            problem = f"the crawl did not drain within {timeout:.0f} s" if drained_at is None else \
                f"a node was still running {now - drained_at:.0f} s after the crawl drained"
            break
        time.sleep(0.1)
    codes = [node.process.poll() for node in nodes]
    for node in nodes:
        node.ensure_stopped()
    return codes, problem


def wait_for_pages(shop: Any, at_least: int, timeout: float = 60) -> int:
    """Wait until the shop served ``at_least`` pages: shop pages only, not the test's own
    /_stats.json polls (counting those, a slow crawl seemed to have reached its mark)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        served = int(shop.pages_served())
        if served >= at_least:
            return served
        time.sleep(0.05)
    raise AssertionError(f"the crawl did not reach {at_least} shop pages in {timeout} s")


def wait_joined(setup: CrawlSetup, name: str, node: Crawler, timeout: float = 90) -> None:
    """Until the crawler started as ``name`` has joined the crawl (its frontier logged what it found)."""
    wait_logged(setup, name, node, " for crawl 'demo', node ", timeout)


def wait_logged(setup: CrawlSetup, name: str, node: Crawler, text: str, timeout: float = 60) -> None:
    """Until the log of the crawler started as ``name`` holds ``text`` (fails if it exits first)."""
    deadline = time.monotonic() + timeout
    while text not in setup.log(name):
        assert time.monotonic() < deadline and node.process.poll() is None, setup.log(name)[-3000:]
        time.sleep(0.02)


def product_store_opened(database_url: str) -> bool:
    """Whether a crawler opened the product store at ``database_url`` (it creates the tables on open)."""
    engine = sqlalchemy.create_engine(database_url)
    try:
        return "sources" in sqlalchemy.inspect(engine).get_table_names()
    finally:
        engine.dispose()
