"""Shared helpers for the benchmarks: load the demo shop, run crawls, print tables."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from urllib.parse import urlparse


async def _client(host: str, port: int, paths: list[str], counter: list[int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    while paths:
        path = paths.pop()
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        counter[0] += 1
    writer.close()


async def _load(url: str, paths: list[str], connections: int) -> float:
    parsed = urlparse(url)
    counter = [0]
    queue = list(reversed(paths))
    started = time.perf_counter()
    await asyncio.gather(*(_client(parsed.hostname or "127.0.0.1", parsed.port or 80, queue, counter)
                           for _ in range(connections)))
    return counter[0] / (time.perf_counter() - started)


def shop_rate(url: str, paths: Sequence[str], connections: int = 32) -> float:
    """Requests per second the demo shop serves to keep-alive clients (one client process)."""
    return asyncio.run(_load(url, list(paths), connections))


def redis_cpu(url: str) -> float:
    """Seconds of CPU the Redis server at ``url`` has used (INFO cpu: system + user)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        info = client.info("cpu")
    finally:
        client.close()
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows)
