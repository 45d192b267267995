"""A private redis-server for one test: a free port, its own --dir and log, started and killed by PID."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import redis

from tests.ports import free_port, listens


class RedisServer:
    """``extra`` options are appended to the command line (``--save ""``, ``--slowlog-...``);
    ``cluster_bus``: the server is a cluster node with a free bus port of its own (``--cluster-port``;
    the default, port + 10000, is past 65535 for a high free port)."""

    STARTS = 5  # a free port taken by someone else before the server binds it: new ports, again

    def __init__(self, folder: Path, *extra: str, cluster_bus: bool = False) -> None:
        self.folder, self.extra, self.cluster_bus = folder, extra, cluster_bus
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen[bytes] | None = None
        self.bound = False  # started once: a restart keeps the port (its clients reconnect to it)
        self._pick_ports()

    def _pick_ports(self) -> None:
        self.port = free_port()
        self.bus_port = free_port() if self.cluster_bus else 0
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        for _ in range(1 if self.bound else self.STARTS):
            if self._started():
                self.bound = True
                return self
            if self.bound:
                break
            (self.folder / "nodes.conf").unlink(missing_ok=True)  # a cluster node's config names its old ports
            self._pick_ports()
        said = [f.read_text(errors="replace")[-2000:] for f in (self.folder / "redis.log", self.folder / "redis.err")
                if f.exists()]
        raise AssertionError(f"private redis-server on port {self.port} did not start: {' '.join(said)}")

    def _started(self) -> bool:
        """Start the server and wait until it is the one answering on its port; False when it exits
        first (its log says why) or another server holds the port."""
        bus = ("--cluster-port", str(self.bus_port)) if self.cluster_bus else ()
        with open(self.folder / "redis.err", "ab") as errors:  # what it says before its log is open
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
                 "--dbfilename", "dump.rdb", "--maxmemory-policy", "noeviction", "--logfile", "redis.log",
                 *bus, *self.extra],
                stdout=errors, stderr=errors)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            if listens(self.process.pid, self.port):
                try:
                    redis.Redis.from_url(self.url).ping()
                    return True
                except redis.BusyLoadingError:
                    pass
                except redis.RedisError:
                    break  # it listens and does not answer: start it again
            time.sleep(0.05)
        self.kill()
        return False

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
