"""`recordhound review ...` and `recordhound apply` as a user runs them (real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text as sql

from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_review_queue import offer_skus, release, rows


@pytest.fixture(params=["embedded", "redis"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env(request.param, tmp_path) as opened:
        yield opened


def recordhound(env: ReviewEnv, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    settings = [arg for pair in env.settings() for arg in ("-s", pair)]
    group, rest = args[0], args[1:]
    if group == "review":  # settings go to the group: `recordhound review -s K=V list`
        command = ["review", *settings, *rest]
    else:
        command = [group, *settings, *rest]
    return subprocess.run([sys.executable, "-m", "recordhound", *command], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "DATABASE_URL": env.database_url, "REDIS_URL": ""})


def test_review_commands_from_list_to_apply(env: ReviewEnv, tmp_path: Path) -> None:
    source = env.source()
    punk = env.seed("artist", "Daft Punk")["Daft Punk"]
    env.writer().write(source, [release("c1", ["Cli Artist"], label="Cli Label"), release("c2", ["Daft Pnuk"]),
                                release("c3", ["Skip This", "Daft Punk"]), release("c4", ["Typo Nmae"])])
    listed = recordhound(env, tmp_path, "review", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    entries = {e["name"]: e for e in json.loads(listed.stdout)}
    assert set(entries) == {"Cli Artist", "Cli Label", "Daft Pnuk", "Skip This", "Typo Nmae"}
    assert entries["Daft Pnuk"]["suggestions"][0]["id"] == punk
    labels = json.loads(recordhound(env, tmp_path, "review", "list", "--type", "label", "--json").stdout)
    assert [e["name"] for e in labels] == ["Cli Label"]
    assert json.loads(recordhound(env, tmp_path, "review", "list", "--source", "elsewhere", "--json").stdout) == []
    text = recordhound(env, tmp_path, "review", "list").stdout
    assert "'Daft Pnuk': 1 items waiting" in text and "suggested merges: Daft Punk" in text

    shown = recordhound(env, tmp_path, "review", "show", str(entries["Cli Artist"]["id"]))
    assert "seen in demo (source 1): http://127.0.0.1/release/c1" in shown.stdout
    assert "waiting: 'Title c1'" in shown.stdout

    for args in (("approve", str(entries["Cli Artist"]["id"])), ("approve", str(entries["Cli Label"]["id"])),
                 ("merge", str(entries["Daft Pnuk"]["id"]), "--into", str(punk)),
                 ("skip", str(entries["Skip This"]["id"])),
                 ("edit", str(entries["Typo Nmae"]["id"]), "--set", "name=Typo Name")):
        done = recordhound(env, tmp_path, "review", *args)
        assert done.returncode == 0 and "queued" in done.stdout, done.stderr
    again = recordhound(env, tmp_path, "review", "approve", str(entries["Cli Artist"]["id"]))
    assert again.returncode == 2 and "not pending" in again.stderr
    bad = recordhound(env, tmp_path, "review", "edit", str(entries["Cli Label"]["id"]), "--set", "nonsense")
    assert bad.returncode == 2 and "FIELD=VALUE" in bad.stderr

    applied = recordhound(env, tmp_path, "apply")
    assert applied.returncode == 0, applied.stderr
    assert "applied 5 decisions, 0 failed" in applied.stdout
    assert offer_skus(env) == {"c1", "c2", "c3", "c4"}
    assert sorted(n for (n,) in rows(env, "SELECT name FROM artists")) == ["Cli Artist", "Daft Punk", "Typo Name"]
    completed = recordhound(env, tmp_path, "review", "completed", "--json")
    assert len(json.loads(completed.stdout)) == 5

    env.writer().write(source, [release("c5", ["Doomed"])])
    doomed = next(e for e in env.queue.entries() if e["name"] == "Doomed")
    refused = recordhound(env, tmp_path, "review", "merge", str(doomed["id"]), "--into", "4242")
    assert refused.returncode == 2 and "there is no artist with id 4242" in refused.stderr  # refused at decision time
    label = 5000  # ids are per type: this one is only a label's
    with env.engine.begin() as conn:
        conn.execute(sql("INSERT INTO labels (id, name, name_key) VALUES (5000, 'A Label', 'a label')"))
    other_type = recordhound(env, tmp_path, "review", "merge", str(doomed["id"]), "--into", str(label))
    assert other_type.returncode == 2 and f"{label} is the id of a label, not of an artist" in other_type.stderr
    with env.engine.begin() as conn:  # an entity that is there at decision time and gone at apply time
        conn.execute(sql("INSERT INTO artists (id, name, name_key) VALUES (4242, 'Gone Soon', 'gone soon')"))
    assert recordhound(env, tmp_path, "review", "merge", str(doomed["id"]), "--into", "4242").returncode == 0
    with env.engine.begin() as conn:
        conn.execute(sql("DELETE FROM artists WHERE id = 4242"))
    assert "applied 0 decisions, 1 failed" in recordhound(env, tmp_path, "apply").stdout
    failed = json.loads(recordhound(env, tmp_path, "review", "failed", "--json").stdout)
    assert len(failed) == 1 and failed[0]["attempts"] == 1 and "no such artist" in failed[0]["last_error"]
    assert "attempts 1: ReviewError" in recordhound(env, tmp_path, "review", "failed").stdout
    retried = recordhound(env, tmp_path, "review", "retry", str(failed[0]["id"]))
    assert retried.returncode == 0 and "back in the approved queue" in retried.stdout
    assert [j["id"] for j in env.queue.jobs("approved")] == [failed[0]["id"]]


def test_review_commands_say_what_is_wrong(env: ReviewEnv, tmp_path: Path) -> None:
    missing = recordhound(env, tmp_path, "review", "show", "999")
    assert missing.returncode == 2 and "no review entry 999" in missing.stderr
    retry = recordhound(env, tmp_path, "review", "retry", "999")
    assert retry.returncode == 2 and "not in the failed queue" in retry.stderr
