"""Node ids: stable across restarts, so a restarted node takes its old leases back at once.

Without RECORDHOUND_NODE_ID a process takes "<host>-<n>", the lowest slot whose holder is
gone: no heartbeat within the lease time, or a process on this host that no longer runs.
"""

from __future__ import annotations

import os
import socket
import uuid

from recordhound.exceptions import RecordhoundError
from recordhound.frontier.backend import FrontierBackend, NodeInfo

MAX_SLOTS = 1000


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a record from an earlier process that had our pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except OSError:
        return True


def this_host() -> str:
    return socket.gethostname()


def holder_alive(info: NodeInfo, host: str, now: float, stale_after: float) -> bool:
    if now - info.heartbeat > stale_after:
        return False
    return pid_alive(info.pid) if info.host == host else True


def this_process(token: str | None = None) -> NodeInfo:
    return NodeInfo(socket.gethostname(), os.getpid(), token or uuid.uuid4().hex, 0.0)


def others_alive(backend: FrontierBackend, stale_after: float, token: str = "") -> bool:
    """Whether any other live process is registered as a node of this crawl."""
    host, now = socket.gethostname(), backend.now()
    return any(info.token != token and holder_alive(info, host, now, stale_after)
               for info in backend.nodes().values())


def claim_node_id(backend: FrontierBackend, configured: str, stale_after: float) -> tuple[str, str]:
    """Returns (node id, token) after registering this process as that node."""
    me = this_process()
    host = me.host
    now = backend.now()
    nodes = backend.nodes()
    candidates = [configured] if configured else [f"{host}-{n}" for n in range(1, MAX_SLOTS + 1)]
    for node in candidates:
        holder = nodes.get(node)
        if holder is not None and holder_alive(holder, host, now, stale_after):
            if configured:
                raise RecordhoundError(
                    f"node id {node!r} (RECORDHOUND_NODE_ID) is in use by pid {holder.pid} on "
                    f"{holder.host}; give each crawler process its own node id")
            continue
        if backend.claim_node(node, me, holder.token if holder else None):
            return node, me.token
    raise RecordhoundError(f"no free node id among {host}-1..{host}-{MAX_SLOTS}")
