"""A private redis-server for one test: a free port, its own --dir, started and killed by PID."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis


class RedisServer:
    """``extra`` options are appended to the command line (``--save ""``, ``--slowlog-...``)."""

    def __init__(self, folder: Path, *extra: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        self.folder, self.extra = folder, extra
        self.folder.mkdir(parents=True, exist_ok=True)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--dbfilename", "dump.rdb", "--maxmemory-policy", "noeviction", *self.extra],
            stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                redis.Redis.from_url(self.url).ping()
                return self
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.05)
        raise AssertionError(f"private redis-server on port {self.port} did not start")

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def snapshot(self, to: Path) -> None:
        """SAVE now and keep a copy of the dump (the state Redis would come back with)."""
        client = self.client()
        try:
            client.save()
        finally:
            client.close()
        shutil.copyfile(self.folder / "dump.rdb", to)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def restore(self, snapshot: Path) -> None:
        """kill -9, then start again on the same port from ``snapshot``."""
        self.kill()
        shutil.copyfile(snapshot, self.folder / "dump.rdb")
        self.start()

    def reload(self, snapshot: Path) -> None:
        """Load ``snapshot`` in place, connections kept (like a failover to a replica that lagged):
        needs ``--enable-debug-command yes``."""
        shutil.copyfile(snapshot, self.folder / "dump.rdb")
        client = self.client()
        try:
            client.execute_command("DEBUG", "RELOAD", "NOSAVE")
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
