"""`recordhound frontier status` and `reset` against real frontier state on both backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recordhound.frontier.backend import FrontierBackend
from recordhound.frontier.redis import RedisFrontier
from recordhound.redis_client import crawl_prefix
from recordhound.frontier.sqlite import SqliteFrontier
from tests.integration.test_frontier_contract import entry
from tests.services import redis_url, unique_prefix


def _cli(workdir: Path, env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recordhound", "frontier", *args], cwd=workdir, input=stdin,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def _crawl_state(kind: str, tmp_path: Path) -> tuple[FrontierBackend, dict[str, str], list[str]]:
    """An open frontier of crawl "demo", and the environment and -s options that point the CLI at it."""
    env, extra = {"REDIS_URL": ""}, []
    if kind == "embedded":
        backend: FrontierBackend = SqliteFrontier(str(tmp_path / ".recordhound/frontier/demo.sqlite3"))
    else:
        prefix = unique_prefix()
        env, extra = {"REDIS_URL": redis_url()}, ["-s", f"RECORDHOUND_REDIS_PREFIX={prefix}"]
        backend = RedisFrontier(redis_url(), crawl_prefix(prefix, "demo"))
    backend.open()
    return backend, env, extra


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_status_then_reset_after_confirmation(kind: str, tmp_path: Path) -> None:
    backend, env, extra = _crawl_state(kind, tmp_path)
    try:
        backend.commit([entry(u) for u in "abcde"], [], [])
        leased = backend.lease("vm-1", 2, 60)
        backend.commit([], [leased[0].lease], [])
        backend.set_status("running")
        shown = _cli(tmp_path, env, *extra, "status", "--json")
        assert shown.returncode == 0, shown.stderr
        (report,) = json.loads(shown.stdout)
        assert (report["crawl"], report["queued"], report["leased_by_node"], report["done"], report["seen"]) == (
            "demo", 3, {"vm-1": 1}, 1, 5)
        text = _cli(tmp_path, env, *extra, "status", "--source", "demo").stdout
        assert "3 queued, 1 leased, 1 done, 0 failed, 5 seen" in text and "leased by vm-1: 1" in text
        refused = _cli(tmp_path, env, *extra, "reset", "--source", "demo", stdin="n\n")
        assert refused.returncode != 0 and backend.counts().queued == 3
        done = _cli(tmp_path, env, *extra, "reset", "--source", "demo", stdin="y\n")
        assert done.returncode == 0, done.stderr
        assert backend.counts().seen == 0 and backend.counts().queued == 0
    finally:
        backend.reset()
        backend.close()


@pytest.mark.parametrize("kind", ["embedded", "redis"])
def test_verify_is_clean_on_consistent_state_and_names_each_inconsistency(kind: str, tmp_path: Path) -> None:
    import redis

    backend, env, extra = _crawl_state(kind, tmp_path)
    try:
        backend.commit([entry(u) for u in "abc"], [], [], seeded=True)
        (leased,) = backend.lease("vm-1", 1, 60)
        backend.commit([], [leased.lease], [])
        clean = _cli(tmp_path, env, *extra, "verify", "--source", "demo")
        assert clean.returncode == 0 and "demo: consistent" in clean.stdout, clean.stdout + clean.stderr
        # damage it the way a bug would: one request queued twice, a lease nobody holds
        if isinstance(backend, SqliteFrontier):
            import sqlite3

            db = sqlite3.connect(backend.path)
            db.execute("INSERT INTO queue (priority, payload) SELECT priority, payload FROM queue LIMIT 1")
            db.commit()
            db.close()
        else:
            client = redis.Redis.from_url(redis_url())
            client.hset(f"{backend.prefix}:payloads", "99", "b")
            client.zadd(f"{backend.prefix}:queue", {"99": 99})
            client.close()
        backend.lease("ghost", 1, 60)
        broken = _cli(tmp_path, env, *extra, "verify", "--source", "demo")
        assert broken.returncode == 1, broken.stdout + broken.stderr
        assert "the same request is queued 2 times" in broken.stdout
        assert "held by node ghost, which is not registered" in broken.stdout
        assert "requests were queued, but done" in broken.stdout or "the queued counter says 1" in broken.stdout
    finally:
        backend.reset()
        backend.close()
