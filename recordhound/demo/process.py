"""Run the demo shop as a child process (for `recordhound demo`, tests and benchmarks)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from types import TracebackType
from typing import Any

from recordhound.children import sigint_ignored_by_children
from recordhound.exceptions import RecordhoundError

READY_PREFIX = "recordhound demo shop serving"


class ShopProcess:
    """``with ShopProcess(releases=500) as shop: shop.url`` — stopped by PID on exit."""

    def __init__(self, releases: int, seed: int = 1, epoch: int = 0, host: str = "127.0.0.1",
                 throttle: tuple[str, ...] = ()) -> None:
        """``throttle``: more demo-shop options, e.g. ("--rate", "20", "--latency", "0.1") or
        ("--epoch-seconds", "5", "--last-epoch", "2")."""
        self.args = [sys.executable, "-m", "recordhound", "demo-shop", "--port", "0", "--host", host,
                     "--releases", str(releases), "--seed", str(seed), "--epoch", str(epoch), *throttle]
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> ShopProcess:
        try:
            with sigint_ignored_by_children():  # a terminal's Ctrl-C does not take the shop away under a
                self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, text=True)  # graceful stop
            assert self.process.stdout is not None
            line = self.process.stdout.readline()
        except BaseException:  # a Ctrl-C meanwhile: the shop (which ignores it) goes too
            self.stop()
            raise
        if not line.startswith(READY_PREFIX):
            self.stop()
            raise RecordhoundError(f"the demo shop did not start (printed {line!r})")
        self.url = line.rsplit(" ", 1)[-1].strip()
        return self

    def get_json(self, path: str) -> Any:
        with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=60) as response:
            return json.load(response)

    def truth(self) -> dict[str, Any]:
        truth: dict[str, Any] = self.get_json("/_truth.json")
        return truth

    def hits(self) -> dict[str, int]:
        hits: dict[str, int] = self.get_json("/_stats.json")["requests"]
        return hits

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = self.get_json("/_stats.json")
        return stats

    def pages_served(self) -> int:
        """Requests served for shop pages (not counting the /_ control endpoints, nor robots.txt,
        which every crawler process reads when it starts)."""
        return sum(n for path, n in self.hits().items() if not path.startswith("/_") and path != "/robots.txt")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> ShopProcess:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
