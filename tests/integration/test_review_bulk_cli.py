"""`recordhound review approve|skip|merge` over many entries in one call (one process, batched writes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.review_env import ReviewEnv, open_env
from tests.integration.test_review_queue import offer_skus, release, rows

CHILDWATCH = Path(__file__).parent / "childwatch"
NAMES = 1000


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> Iterator[ReviewEnv]:
    """SQLite product DB + embedded queue, or PostgreSQL + the Redis queue."""
    with open_env(database_url, tmp_path) as opened:
        yield opened


def recordhound(env: ReviewEnv, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One `recordhound review ...` process; every child it starts is logged to children.log."""
    settings = [arg for pair in env.settings() for arg in ("-s", pair)]
    log = tmp_path / "children.log"
    return subprocess.run([sys.executable, "-m", "recordhound", "review", *settings, *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DATABASE_URL": env.database_url, "REDIS_URL": "",
                               "PYTHONPATH": os.pathsep.join([str(CHILDWATCH), os.environ.get("PYTHONPATH", "")]),
                               "RECORDHOUND_CHILDREN_LOG": str(log)})


def children(tmp_path: Path) -> list[str]:
    log = tmp_path / "children.log"
    return log.read_text().splitlines() if log.exists() else []


def bulk_name(index: int) -> str:
    return f"Bulk Artist {index:04d}"


def test_approve_all_artists_is_one_process_and_the_catalog_is_the_expected_one(env: ReviewEnv,
                                                                                 tmp_path: Path) -> None:
    source = env.source()
    env.seed("label", "Bulk Label")
    env.writer().write(source, [release(f"b{i:04d}", [bulk_name(i)], label="Bulk Label") for i in range(NAMES)])
    assert len(env.queue.entries("artist")) == NAMES and offer_skus(env) == set()

    done = recordhound(env, tmp_path, "approve", "--all", "--type", "artist", "--apply")

    assert done.returncode == 0, done.stderr
    assert children(tmp_path) == []  # the test started one process; it started none
    assert env.queue.entries() == [] and env.queue.counts()["approved"] == 0
    completed = env.queue.jobs("completed")
    assert len(completed) == NAMES and {j["result"]["status"] for j in completed} == {"approved"}
    assert rows(env, "SELECT id, name FROM artists ORDER BY id") == [(i + 1, bulk_name(i)) for i in range(NAMES)]
    assert rows(env, "SELECT id, name FROM labels") == [(1, "Bulk Label")]
    assert offer_skus(env) == {f"b{i:04d}" for i in range(NAMES)}
    assert [i for (i,) in rows(env, "SELECT id FROM releases ORDER BY id")] == list(range(1, NAMES + 1))
    assert f"approve: {NAMES} decided" in done.stdout and f"applied {NAMES} decisions, 0 failed" in done.stdout
    assert "/s" in done.stderr  # progress lines with the rate


def test_merge_above_a_score_skip_and_approve_by_ids_and_source(env: ReviewEnv, tmp_path: Path) -> None:
    source, other = env.source(), env.source("other")
    known = env.seed("artist", "Daft Punk", "Aphex Twin", "Boards of Canada")
    env.writer().write(source, [release("v1", ["Daft Pnuk"]), release("v2", ["Aphex Twni"]),
                                release("n1", ["Totally New Name"]), release("n2", ["Another Newcomer"])])
    env.writer().write(other, [release("o1", ["Boards of Canda"]), release("o2", ["Other Shop Newbie"])])
    by_name = {e["name"]: e for e in env.queue.entries()}
    assert by_name["Daft Pnuk"]["suggestions"][0]["score"] > 70

    merged = recordhound(env, tmp_path, "merge", "--suggested-above", "70", "--type", "artist", "--source", "demo",
                         "--apply")
    assert merged.returncode == 0, merged.stderr
    assert "merge: 2 decided" in merged.stdout
    synonyms = rows(env, "SELECT spelling, artist_id FROM artist_synonyms WHERE spelling IN ('Daft Pnuk', 'Aphex Twni')")
    assert dict(synonyms) == {"Daft Pnuk": known["Daft Punk"], "Aphex Twni": known["Aphex Twin"]}
    assert "Boards of Canda" in {e["name"] for e in env.queue.entries()}  # another source: left alone

    new, newcomer = by_name["Totally New Name"]["id"], by_name["Another Newcomer"]["id"]
    skipped = recordhound(env, tmp_path, "skip", str(newcomer), "--apply")
    approved = recordhound(env, tmp_path, "approve", str(new), "--apply")
    assert skipped.returncode == approved.returncode == 0, skipped.stderr + approved.stderr
    left = recordhound(env, tmp_path, "approve", "--all", "--source", "other", "--no-suggestion", "--json")
    assert left.returncode == 0, left.stderr
    assert [j["name"] for j in json.loads(left.stdout)] == ["Other Shop Newbie"]
    assert sorted(n for (n,) in rows(env, "SELECT name FROM artists")) == [
        "Aphex Twin", "Boards of Canada", "Daft Punk", "Totally New Name"]
    assert offer_skus(env) == {"v1", "v2", "n1"}


@pytest.mark.parametrize("args, message", [
    (("approve", "1", "99999"), "no review entry 99999"),
    (("approve",), "name entries (ID...) or pick them with --all"),
    (("approve", "1", "--all"), "either entry ids or --all"),
    (("merge", "--suggested-above", "120", "--type", "artist"), "--suggested-above must be a score from 0 to 100"),
    (("merge", "--all", "--type", "artist"), "merge needs --into ID or --suggested-above SCORE"),
    (("skip", "--all", "--source", "nowhere"), "no source named 'nowhere'"),
])
def test_a_user_error_is_one_line_and_nothing_is_decided(env: ReviewEnv, tmp_path: Path, args: tuple[str, ...],
                                                         message: str) -> None:
    env.writer().write(env.source(), [release("u1", ["Unknown One"]), release("u2", ["Unknown Two"])])
    done = recordhound(env, tmp_path, *args)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert len(env.queue.entries()) == 2 and env.queue.jobs("approved") == []
