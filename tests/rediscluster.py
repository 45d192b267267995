"""A private 3-master Redis Cluster for one test: three ``redis-server --cluster-enabled yes`` on free
ports, each with its own --dir, joined by ``redis-cli --cluster create``; stopped by PID."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import redis

from tests.redisserver import RedisServer

MASTERS = 3


class RedisCluster:
    def __init__(self, folder: Path) -> None:
        self.servers = [RedisServer(folder / f"node{i}", "--cluster-enabled", "yes", "--cluster-config-file",
                                    "nodes.conf", "--cluster-node-timeout", "5000", "--save", "", "--appendonly", "no",
                                    cluster_bus=True)
                        for i in range(MASTERS)]

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.servers[0].port}"

    def __enter__(self) -> RedisCluster:
        try:
            for server in self.servers:
                server.start()
            subprocess.run(["redis-cli", "--cluster", "create", *(f"127.0.0.1:{s.port}" for s in self.servers),
                            "--cluster-replicas", "0", "--cluster-yes"], check=True, capture_output=True, timeout=60)
            self._wait_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ok(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            infos = [redis.Redis(port=s.port).cluster("info") for s in self.servers]
            if all(info.get("cluster_state") == "ok" and int(info.get("cluster_known_nodes", 0)) == MASTERS
                   for info in infos):
                return
            time.sleep(0.1)
        raise AssertionError("the private Redis Cluster never reached cluster_state:ok")

    def keys(self) -> list[bytes]:
        """Every key of every master."""
        found: list[bytes] = []
        for server in self.servers:
            client = server.client()
            found += list(client.scan_iter(count=1000))
            client.close()
        return found

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __exit__(self, *_: object) -> None:
        self.stop()
