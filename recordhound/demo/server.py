"""The demo shop's HTTP/1.1 server: asyncio, keep-alive, pre-rendered pages.

Fast enough that it is never the bottleneck of a crawl benchmark (``bench/crawl_store.py``
measures its own rate). Serves ``/_truth.json`` and ``/_stats.json`` (requests per path, and the
most requests it had in flight at once and started within one second).

Throttled mode (``Throttle``) behaves like a shop that protects itself: each answer takes
``latency`` seconds, more than ``rate`` requests within one second get a 429 with ``Retry-After``,
and every ``unavailable_every``-th product page answers 503 to its first ``unavailable_times``
requests. The truth does not change: a polite crawler that retries stores every release.

Every HTML page has an ``ETag`` (its body's hash) and a ``Last-Modified`` (when its body last
changed); a request with a matching ``If-None-Match`` (or, without one, an ``If-Modified-Since``
not before ``Last-Modified``) gets ``304 Not Modified``. With ``epoch_seconds`` the price epoch
advances over time (up to ``last_epoch``), so a recrawl schedule has changes to catch; the
truth is always the current epoch's. ``/_next_epoch`` moves it on by one at once (tests that wait
for a crawl to settle before the prices move, rather than for a clock).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import time
import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

from recordhound.demo import feeds, sitemaps, woo_api
from recordhound.demo.shop_pages import build_shop_sections
from recordhound.demo.shops import section_releases
from recordhound.demo.catalog import Catalog
from recordhound.demo.jsite import build_js_site
from recordhound.demo.ldsite import build_ld_site
from recordhound.demo.offsite import with_offsite_links
from recordhound.demo.site import Page, build_site, not_found
from recordhound.demo.truth import build_truth

logger = logging.getLogger(__name__)
MAX_HEAD_BYTES = 16 * 1024


@dataclass(frozen=True)
class Throttle:
    rate: float = 0.0  # requests per second before 429s (0: none)
    latency: float = 0.0  # seconds each answer takes
    unavailable_every: int = 0  # every N-th product page answers 503 at first (0: none)
    unavailable_times: int = 2
    retry_after: int = 1  # seconds, in the 429's Retry-After
    crawl_delay: float = 0.0  # seconds, robots.txt's Crawl-delay (0: not said)


@dataclass(frozen=True)
class Epochs:
    seconds: float = 0.0  # the price epoch advances this often (0: never)
    last: int = 0  # ...up to this epoch


class DemoShop:
    """State shared by all connections: the pages, the request counts, the one-time faults."""

    def __init__(self, catalog: Catalog, throttle: Throttle = Throttle(), epochs: Epochs = Epochs(),
                 offsite_links: bool = False, woo_store_api: bool = True) -> None:
        self.catalog, self.throttle, self.epochs = catalog, throttle, epochs
        self.offsite_links = offsite_links  # each listing page links to another site (never to be fetched)
        self.woo_store_api = woo_store_api  # False: the WooCommerce-like Store API answers 401
        self.started, self.first_epoch = time.time(), catalog.epoch
        self.origin = "http://127.0.0.1/"  # the server's own URL once it listens (robots.txt, sitemaps)
        self.site: dict[str, Page] = {}
        self.validators: dict[str, tuple[str, float]] = {}  # path -> (ETag, when its body last changed)
        self._generated: dict[str, Page] = {}
        self._build(catalog)
        self.fetched_at: defaultdict[str, list[float]] = defaultdict(list)  # page requests answered 200 or 304
        self.not_modified: Counter[str] = Counter()  # 304s sent, per path
        self.hits: Counter[str] = Counter()
        self.flaky_path = next((p.path for p in catalog.products if p.fault == "flaky"), None)
        every = throttle.unavailable_every
        self.unavailable = {p.path for i, p in enumerate(catalog.products) if every and i % every == every - 1}
        self.per_second: Counter[int] = Counter()  # shop pages started in each second (epoch seconds)
        self.in_flight = self.max_in_flight = 0
        self.refused = Counter[str]()  # 429s and 503s sent

    def arrived(self, target: str) -> Page | None:
        """Count a request in; a throttled shop may answer it at once with a 429. robots.txt is
        the crawler's question before any page, not a page: it is counted in ``hits`` only."""
        if target.startswith("/_") or target == "/robots.txt":
            return None
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        second = math.floor(time.time())
        self.per_second[second] += 1
        if self.throttle.rate and self.per_second[second] > self.throttle.rate:
            self.refused["429"] += 1
            return Page(429, "text/plain; charset=utf-8", b"slow down\n",
                        headers=(("Retry-After", str(self.throttle.retry_after)),))
        return None

    def left(self, target: str) -> None:
        if not (target.startswith("/_") or target == "/robots.txt"):
            self.in_flight -= 1

    def _build(self, catalog: Catalog) -> None:
        now = time.time()
        self.catalog = catalog
        self.site = {**build_site(catalog), **build_js_site(catalog), **build_ld_site(catalog),
                     **build_shop_sections(catalog)}
        if self.offsite_links:
            self.site = with_offsite_links(self.site)
        for path, page in self.site.items():
            if page.status == 200 and (page.content_type.startswith("text/html") or _product_json(path)):
                etag = '"' + hashlib.sha1(page.body, usedforsecurity=False).hexdigest()[:20] + '"'
                if self.validators.get(path, ("", 0.0))[0] != etag:
                    self.validators[path] = (etag, now)
        self._generated = {}  # the truth and the feeds are the new epoch's

    def _advance(self) -> None:
        if not self.epochs.seconds:
            return
        epoch = min(self.epochs.last, self.first_epoch + int((time.time() - self.started) // self.epochs.seconds))
        if epoch != self.catalog.epoch:
            logger.info("price epoch %d", epoch)
            self._build(Catalog(self.catalog.releases, seed=self.catalog.seed, epoch=epoch))

    def conditional(self, target: str, page: Page, headers: dict[str, str]) -> Page:
        """The page with its validators, or 304 when the client's copy is current."""
        if target not in self.validators or page.status != 200:
            return page
        etag, changed_at = self.validators[target]
        modified = formatdate(changed_at, usegmt=True)
        validators = (("ETag", etag), ("Last-Modified", modified))
        self.fetched_at[target].append(round(time.time(), 3))
        match = headers.get("if-none-match")
        fresh = etag in [tag.strip() for tag in match.split(",")] if match else _not_modified_since(
            headers.get("if-modified-since"), changed_at)
        if fresh:
            self.not_modified[target] += 1
            return Page(304, "", b"", headers=validators)
        return replace(page, headers=(*page.headers, *validators))

    def respond(self, target: str) -> Page:
        self._advance()
        self.hits[target] += 1
        if target == self.flaky_path and self.hits[target] == 1:
            return Page(500, "text/plain; charset=utf-8", b"temporary failure, try again\n")
        if target in self.unavailable and self.hits[target] <= self.throttle.unavailable_times:
            self.refused["503"] += 1
            return Page(503, "text/plain; charset=utf-8", b"down for maintenance\n")
        page = self.site.get(target)
        if page is not None:
            return page
        return self._special(target) or not_found()

    def _special(self, target: str) -> Page | None:
        if target == "/_stats.json":
            stats = {"total": sum(self.hits.values()), "requests": dict(self.hits),
                     "max_in_flight": self.max_in_flight, "in_flight": self.in_flight,
                     "max_per_second": max(self.per_second.values(), default=0),
                     "per_second": {str(k): v for k, v in sorted(self.per_second.items())},
                     "refused": dict(self.refused), "epoch": self.catalog.epoch,
                     "not_modified": self.not_modified, "fetched_at": self.fetched_at}
            return Page(200, "application/json", json.dumps(stats).encode())
        if target == "/_next_epoch":  # a test moves the prices (and their pages' lastmod) when it is ready
            self._build(Catalog(self.catalog.releases, seed=self.catalog.seed, epoch=self.catalog.epoch + 1))
            return Page(200, "application/json", json.dumps({"epoch": self.catalog.epoch}).encode())
        if target == "/_truth.json":
            return self._cached(target, "application/json", lambda: json.dumps(build_truth(self.catalog)).encode())
        if target == "/robots.txt":
            return sitemaps.robots_txt(self.origin, self.throttle.crawl_delay)
        if target == sitemaps.INDEX_PATH:
            return sitemaps.sitemap_index(self.origin, max(changed for _, changed in self.validators.values()))
        if target == sitemaps.PRODUCTS_PATH:
            products = [r.path for r in section_releases(self.catalog, "shopify")]
            return sitemaps.products_sitemap(self.origin, {p: self.validators[p][1] for p in products})
        if target == sitemaps.COLLECTIONS_PATH:
            return sitemaps.collections_sitemap(self.origin)
        if target.startswith(woo_api.API_PATH):
            return woo_api.store_api(section_releases(self.catalog, "woo"), target, self.origin, self.woo_store_api)
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
        self.pending: dict[int, tuple[asyncio.TimerHandle, str]] = {}  # delayed answers (throttled latency)
        self._ids = itertools.count()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a TCP server's transports are
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        """The client is gone: its requests are no longer in flight (their answers are dropped)."""
        for handle, target in self.pending.values():
            handle.cancel()
            self.shop.left(target)
        self.pending.clear()
        self.transport = None

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
        if parts[0] not in ("GET", "HEAD"):
            self._send(Page(405, "text/plain", b""), keep_alive)
            return
        target = parts[1]
        page = self.shop.arrived(target) or self.shop.conditional(target, self.shop.respond(target), headers)
        if self.shop.throttle.latency and not target.startswith("/_"):
            loop = asyncio.get_running_loop()
            key = next(self._ids)
            handle = loop.call_later(self.shop.throttle.latency, self._answered, target, page, keep_alive,
                                     parts[0] == "HEAD", key)
            self.pending[key] = (handle, target)
            return
        self._answered(target, page, keep_alive, parts[0] == "HEAD")

    def _answered(self, target: str, page: Page, keep_alive: bool, head_only: bool,
                  key: int | None = None) -> None:
        if key is not None:
            self.pending.pop(key, None)
        self.shop.left(target)
        if self.transport is not None and not self.transport.is_closing():
            self._send(page, keep_alive, head_only)

    def _send(self, page: Page, keep_alive: bool, head_only: bool = False) -> None:
        assert self.transport is not None
        reason = {200: "OK", 301: "Moved Permanently", 304: "Not Modified", 404: "Not Found", 429: "Too Many Requests",
                  500: "Internal Server Error", 503: "Service Unavailable"}.get(page.status, "Other")
        location = f"Location: {page.location}\r\n" if page.location else ""
        location += "".join(f"{name}: {value}\r\n" for name, value in page.headers)
        head = (
            f"HTTP/1.1 {page.status} {reason}\r\n"
            + (f"Content-Type: {page.content_type}\r\n" if page.content_type else "") + f"{location}"
            f"Content-Length: {len(page.body)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        ).encode("latin-1")
        self.transport.write(head if head_only else head + page.body)
        if not keep_alive:
            self.transport.close()


def _product_json(path: str) -> bool:
    """A Shopify-like product's own ``.json``: validated (ETag, Last-Modified) like its page."""
    return path.startswith("/shopify/products/") and path.endswith(".json")


def _not_modified_since(since: str | None, changed_at: float) -> bool:
    if not since:
        return False
    try:
        return parsedate_to_datetime(since).timestamp() >= int(changed_at)
    except (TypeError, ValueError):
        return False


async def serve(shop: DemoShop, host: str, port: int, on_ready: Any = None) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Connection(shop), host, port, backlog=1024)
    bound = server.sockets[0].getsockname()
    shop.origin = f"http://{bound[0]}:{bound[1]}/"
    if on_ready is not None:
        on_ready(f"http://{bound[0]}:{bound[1]}/")
    async with server:
        await server.serve_forever()
