"""A TCP proxy between the crawlers and Redis that a test can break on purpose.

    with FaultProxy(6379) as proxy:        # listens on 127.0.0.1, port 0 (proxy.port)
        url = proxy.url(db=0)              # redis://127.0.0.1:PORT/0
        proxy.cut(2.0)                     # every connection closed, new ones refused, for 2 s
        proxy.stall(2.0)                   # connections accepted, nothing forwarded for 2 s
        proxy.blackhole(2.0)               # bytes swallowed for 2 s, then those connections closed

Outage calls return at once; the proxy heals on its own when the time is up (``wait_healed``
waits for that). Threads only: one accept loop and two pumps per connection.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

PASS, CUT, STALL, BLACKHOLE = "pass", "cut", "stall", "blackhole"
POLL_SECONDS = 0.05


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client, self.upstream = client, upstream
        self.closed = threading.Event()
        self.poisoned = False  # bytes were swallowed: the stream is broken, close it when healed

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for sock in (self.client, self.upstream):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class FaultProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self._listener.settimeout(POLL_SECONDS)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._mode, self._until = PASS, 0.0
        self._links: set[_Link] = set()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name="faultproxy-accept", daemon=True)
        self.outages: list[tuple[str, float]] = []  # (kind, seconds), in order

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    # --- control ---------------------------------------------------------------------

    def mode(self) -> str:
        with self._lock:
            if self._mode != PASS and time.monotonic() >= self._until:
                self._mode = PASS
            return self._mode

    def _set(self, mode: str, seconds: float) -> None:
        with self._lock:
            self._mode, self._until = mode, time.monotonic() + seconds
        self.outages.append((mode, seconds))

    def cut(self, seconds: float) -> None:
        """Close every connection now and refuse new ones (accepted, then closed) for ``seconds``."""
        self._set(CUT, seconds)
        for link in self._snapshot():
            link.close()

    def stall(self, seconds: float) -> None:
        """Keep connections open and accept new ones, but forward nothing for ``seconds``;
        what was held back is delivered afterwards (a frozen network, not a broken one)."""
        self._set(STALL, seconds)

    def blackhole(self, seconds: float) -> None:
        """Swallow every byte in both directions for ``seconds``; the connections that lost bytes
        are closed when the time is up (their protocol stream is broken)."""
        self._set(BLACKHOLE, seconds)

    def outage(self, kind: str, seconds: float) -> None:
        {CUT: self.cut, STALL: self.stall, BLACKHOLE: self.blackhole}[kind](seconds)

    def heal(self) -> None:
        """End the outage now (as if its time were up)."""
        with self._lock:
            self._until = time.monotonic()

    def wait_healed(self) -> None:
        while self.mode() != PASS:
            time.sleep(POLL_SECONDS)

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        self._listener.close()
        for link in self._snapshot():
            link.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def _snapshot(self) -> list[_Link]:
        with self._lock:
            return list(self._links)

    # --- forwarding ------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            if self.mode() == CUT:
                client.close()  # refused: the client sees the connection closed at once
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            link = _Link(client, upstream)
            for sock in (client, upstream):
                sock.settimeout(POLL_SECONDS)
            with self._lock:
                self._links.add(link)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(link, source, sink), daemon=True,
                                 name="faultproxy-pump").start()

    def _pump(self, link: _Link, source: socket.socket, sink: socket.socket) -> None:
        held = b""
        try:
            while not link.closed.is_set() and not self._stopped.is_set():
                mode = self.mode()
                if mode == CUT:
                    break
                if mode == PASS and link.poisoned:
                    break
                if mode == PASS and held:
                    sink.sendall(held)
                    held = b""
                try:
                    data = source.recv(65536)
                except (TimeoutError, socket.timeout):
                    continue
                if not data:
                    break
                mode = self.mode()
                if mode == STALL:
                    held += data
                elif mode == BLACKHOLE:
                    link.poisoned = True
                elif mode == PASS:
                    sink.sendall(held + data)
                    held = b""
                else:
                    break
        except OSError:
            pass
        finally:
            link.close()
            with self._lock:
                self._links.discard(link)
