"""Lease renewal and the node's heartbeat, on a thread of their own.

On the reactor's tick, a callback that holds the reactor for longer than the lease time (a
huge page, a slow pipeline) would let this node's leases expire while it is alive and
working. The renewer has its own backend connection, so it keeps renewing whatever the
engine does. It renews exactly the (id, token) pairs the process holds (``held``, published by
the tick), never "every lease stored under this node id": after a store came back from an older
snapshot those could be leases this process already finished. Leases the store no longer has are
reported (``take_gone``) and the tick re-syncs. A process that is frozen (SIGSTOP, a swap storm)
freezes this thread too: its leases expire and another node takes them; its late acks are then
refused by the lease tokens.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from recordhound.frontier.backend import FrontierBackend, Lease
from recordhound.frontier.nodes import this_process

logger = logging.getLogger(__name__)


class Renewer:
    def __init__(self, open_backend: Callable[[], FrontierBackend], node: str, token: str,
                 lease_seconds: float) -> None:
        self._open_backend, self.node, self.token = open_backend, node, token
        self.lease_seconds = lease_seconds
        self.held: list[Lease] = []  # replaced whole by the reactor thread (an atomic assignment)
        self._gone = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recordhound-lease-renewer", daemon=True)
        self.failures = 0  # failed rounds in a row
        self.taken = False  # another process registered this node id: this one must stop

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def take_gone(self) -> bool:
        """Whether a renewal found leases the store no longer has (since the last call)."""
        if self._gone.is_set():
            self._gone.clear()
            return True
        return False

    def _run(self) -> None:
        backend: FrontierBackend | None = None
        while not self._stop.wait(self.lease_seconds / 4):
            try:
                if backend is None:
                    backend = self._open_backend()
                self.renew(backend)
            except Exception as exc:  # noqa: BLE001 - the store's errors are many; try again next round
                self.failures += 1
                if self.failures == 1:
                    logger.warning("Could not renew this node's leases (%s: %s); retrying", type(exc).__name__, exc)
                if backend is not None:
                    backend.close()
                    backend = None
                continue
            if self.failures:
                logger.info("Renewing this node's leases again after %d failed rounds", self.failures)
                self.failures = 0
        if backend is not None:
            backend.close()

    def renew(self, backend: FrontierBackend) -> None:
        if backend.renew(self.node, self.held, self.lease_seconds):
            self._gone.set()
        if not backend.heartbeat(self.node, self.token) and not self._stop.is_set():
            # (told to stop: the node may have left the crawl meanwhile, not to be registered again)
            self.taken = not backend.claim_node(self.node, this_process(self.token), None)
