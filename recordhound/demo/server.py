"""The demo shop's HTTP/1.1 server: asyncio, keep-alive, pre-rendered pages.

Fast enough that it is never the bottleneck of a crawl benchmark (``bench/crawl_store.py``
measures its own rate). Serves ``/_truth.json`` and ``/_stats.json`` (requests per path).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from recordhound.demo import feeds
from recordhound.demo.catalog import Catalog
from recordhound.demo.jsite import build_js_site
from recordhound.demo.ldsite import build_ld_site
from recordhound.demo.site import Page, build_site, not_found
from recordhound.demo.truth import build_truth

logger = logging.getLogger(__name__)
MAX_HEAD_BYTES = 16 * 1024


class DemoShop:
    """State shared by all connections: the pages, the request counts, the one-time faults."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.site = {**build_site(catalog), **build_js_site(catalog), **build_ld_site(catalog)}
        self.hits: Counter[str] = Counter()
        self.flaky_path = next((p.path for p in catalog.products if p.fault == "flaky"), None)
        self._generated: dict[str, Page] = {}

    def respond(self, target: str) -> Page:
        self.hits[target] += 1
        if target == self.flaky_path and self.hits[target] == 1:
            return Page(500, "text/plain; charset=utf-8", b"temporary failure, try again\n")
        page = self.site.get(target)
        if page is not None:
            return page
        return self._special(target) or not_found()

    def _special(self, target: str) -> Page | None:
        if target == "/_stats.json":
            stats = {"total": sum(self.hits.values()), "requests": dict(self.hits)}
            return Page(200, "application/json", json.dumps(stats).encode())
        if target == "/_truth.json":
            return self._cached(target, "application/json", lambda: json.dumps(build_truth(self.catalog)).encode())
        if target in feeds.FEEDS:
            content_type, render = feeds.FEEDS[target]
            return self._cached(target, content_type, lambda: render(self.catalog))
        return None

    def _cached(self, target: str, content_type: str, make: Callable[[], bytes]) -> Page:
        """Generated once on first request (the XLSX feed takes a second or two)."""
        if target not in self._generated:
            self._generated[target] = Page(200, content_type, make())
        return self._generated[target]


class _Connection(asyncio.Protocol):
    def __init__(self, shop: DemoShop) -> None:
        self.shop = shop
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a TCP server's transports are
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer and self.transport is not None:
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self._answer(head)
        if len(self.buffer) > MAX_HEAD_BYTES and self.transport is not None:
            self.transport.close()

    def _answer(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            self._send(Page(400, "text/plain", b"bad request\n"), keep_alive=False)
            return
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        keep_alive = headers.get("connection", "").lower() != "close" and parts[2] == "HTTP/1.1"
        page = self.shop.respond(parts[1]) if parts[0] in ("GET", "HEAD") else Page(405, "text/plain", b"")
        self._send(page, keep_alive, head_only=parts[0] == "HEAD")

    def _send(self, page: Page, keep_alive: bool, head_only: bool = False) -> None:
        assert self.transport is not None
        reason = {200: "OK", 301: "Moved Permanently", 404: "Not Found",
                  500: "Internal Server Error"}.get(page.status, "Other")
        location = f"Location: {page.location}\r\n" if page.location else ""
        head = (
            f"HTTP/1.1 {page.status} {reason}\r\nContent-Type: {page.content_type}\r\n{location}"
            f"Content-Length: {len(page.body)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        ).encode("latin-1")
        self.transport.write(head if head_only else head + page.body)
        if not keep_alive:
            self.transport.close()


async def serve(shop: DemoShop, host: str, port: int, on_ready: Any = None) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Connection(shop), host, port, backlog=1024)
    bound = server.sockets[0].getsockname()
    if on_ready is not None:
        on_ready(f"http://{bound[0]}:{bound[1]}/")
    async with server:
        await server.serve_forever()
