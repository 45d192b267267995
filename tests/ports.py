"""A free loopback port for a server a test starts (someone may take it before the server binds
it: the servers' ``start`` tries again on a new one when theirs exits)."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def free_port() -> int:
    """A port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself holds the socket listening on loopback ``port`` (not another
    server that took the port first and answers in its place)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    try:
        return any(os.readlink(fd) in inodes for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
