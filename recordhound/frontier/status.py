"""`recordhound frontier status|reset|verify|failed|retry`: one crawl's frontier as the operators see it."""

from __future__ import annotations

import glob
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from recordhound.config import FrontierConfig
from recordhound.frontier.backend import DeadLetter, FrontierBackend
from recordhound.frontier.factory import make_backend


@contextmanager
def opened(config: FrontierConfig, crawl: str) -> Iterator[FrontierBackend]:
    """One crawl's backend, open for a command (which may wait longer than a crawl's reactor)."""
    backend = make_backend(config, crawl, timeout=30.0)
    backend.open()
    try:
        yield backend
    finally:
        backend.close()


def reason_kind(reason: str) -> str:
    """The group of a failure reason: "http_404", "download_failed", "redirect_loop", ..."""
    return reason.split(":", 1)[0].split(" (attempt", 1)[0].strip()


def failures_by_reason(backend: FrontierBackend) -> dict[str, int]:
    return dict(Counter(reason_kind(letter.reason) for letter in backend.dead_letters()).most_common())


def matching(letters: list[DeadLetter], reason: str | None = None, url: str | None = None) -> list[DeadLetter]:
    """Dead letters of one reason group (or whose reason contains ``reason``) and/or one URL."""
    return [letter for letter in letters
            if (reason is None or reason_kind(letter.reason) == reason or reason in letter.reason)
            and (url is None or letter.url == url)]


def known_crawls(config: FrontierConfig) -> list[str]:
    """Crawls with frontier state: files in the frontier folder, or Redis key prefixes."""
    if config.redis_url:
        from recordhound.redis_client import connect, crawl_of

        client = connect(config.redis_url)
        prefix = f"{config.redis_prefix}:"
        names = {crawl_of(key.decode()[len(prefix):].rsplit(":", 1)[0])
                 for key in client.scan_iter(match=f"{prefix}*:state", count=1000)}
        client.close()
        return sorted(names)
    if "{crawl}" not in config.path_template:
        return ["(JOBDIR)"] if os.path.exists(config.path_template) else []
    pattern = config.path_template.replace("{crawl}", "*")
    head, tail = config.path_template.split("{crawl}")
    return sorted(path[len(head):len(path) - len(tail)] for path in glob.glob(pattern))


def describe(backend: FrontierBackend, crawl: str) -> dict[str, Any]:
    counts = backend.counts()
    now = backend.now()
    return {
        "crawl": crawl, "status": counts.status, "queued": counts.queued,
        "leased": counts.leased_total, "leased_by_node": counts.leased, "done": counts.done,
        "failed": counts.failed, "seen": counts.seen,
        "nodes": {node: {"host": i.host, "pid": i.pid, "heartbeat_age_seconds": round(now - i.heartbeat, 1)}
                  for node, i in backend.nodes().items()},
        "recent_failures": [reason for _, reason in backend.failures(5)],
        "waiting_for_retry": counts.waiting, "failed_by_reason": failures_by_reason(backend),
        "scheduled": counts.scheduled, "due_within_hour": counts.due_within_hour, "due": counts.due,
    }


def status(config: FrontierConfig, crawl: str) -> dict[str, Any]:
    with opened(config, crawl) as backend:
        return describe(backend, crawl)


def reset(config: FrontierConfig, crawl: str) -> None:
    with opened(config, crawl) as backend:
        backend.reset()


def verify(config: FrontierConfig, crawl: str) -> list[str]:
    """The backend's own consistency checks, plus what must hold for the crawl as a whole."""
    with opened(config, crawl) as backend:
        problems = backend.verify()
        counts, nodes = backend.counts(), backend.nodes()
        if counts.status == "completed" and (counts.queued or counts.leased_total):
            # rechecks that came due since are work for the next run, not a problem
            problems.append(f"the crawl is completed but {counts.queued} requests are queued and "
                            f"{counts.leased_total} leased")
        problems += [f"{count} leases are held by node {node}, which is not registered"
                     for node, count in sorted(counts.leased.items()) if node not in nodes]
        return problems
