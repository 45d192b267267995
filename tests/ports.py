"""A free loopback port for a server a test starts (someone may take it before the server binds
it: the servers' ``start`` tries again on a new one when theirs exits)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
