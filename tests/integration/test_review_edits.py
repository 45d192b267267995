"""The review queue's "edit" decision on both backends (embedded + SQLite, Redis + PostgreSQL): a name
that does not fit its column (or whose matching key does not) is refused when decided, from the queue,
`recordhound review edit` and the admin; a name that is already a synonym of an entity attaches the
entry to that entity, applied one by one or in a batch."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.db import entities
from recordhound.review.queue import Decision, ReviewError
from tests.integration.admin_server import admin_server, logged_in
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_review_queue import offer_skus, release, rows
from tests.integration.truthcheck import assert_ids_consecutive

TOO_LONG = [  # (kind, edited name, the error the reviewer sees); every name column holds 300 characters
    ("artist", "X" * 301, "edit: the new artist name is 301 characters long; the column holds at most 300"),
    ("artist", "ß" * 160, "edit: the new artist name is 160 characters long but its matching key is 320; "
                          "the column holds at most 300"),
    ("label", "L" * 400, "edit: the new label name is 400 characters long; the column holds at most 300"),
    ("style", "ß" * 151, "edit: the new style name is 151 characters long but its matching key is 302; "
                         "the column holds at most 300"),
]
FITS = {"artist": "X" * 300, "label": "L" * 300, "style": "ß" * 150}  # at the limit (a key of 300 for "ß" * 150)


@pytest.fixture(params=["embedded", "redis"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env(request.param, tmp_path) as opened:
        yield opened


def entry_of(env: ReviewEnv, name: str) -> int:
    found = [e["id"] for e in env.queue.entries() if e["name"] == name]
    assert len(found) == 1, env.queue.entries()
    return int(found[0])


def names_release(sku: str, kind: str, name: str) -> object:
    if kind == "artist":
        return release(sku, [name])
    return release(sku, ["Known"], label=name) if kind == "label" else release(sku, ["Known"], styles=[name])


@pytest.mark.parametrize(("kind", "name", "error"), TOO_LONG, ids=["artist", "artist-key", "label", "style-key"])
def test_an_edit_to_a_name_too_long_for_its_column_is_refused_when_decided(
        env: ReviewEnv, kind: str, name: str, error: str) -> None:
    source = env.source()
    env.seed("artist", "Known")
    env.writer().write(source, [names_release("t1", kind, "Typo"), release("o1", ["Other"])])
    typo, other = entry_of(env, "Typo"), entry_of(env, "Other")
    with pytest.raises(ReviewError) as refused:
        env.queue.decide(typo, "edit", fields={"name": name})
    assert str(refused.value) == error
    with pytest.raises(ReviewError) as refused_with_others:  # many decisions at once: none is recorded
        env.queue.decide_many([Decision(other, "approve"), Decision(typo, "edit", fields={"name": f"  {name} "})])
    assert str(refused_with_others.value) == error
    assert env.queue.jobs("approved") == [] and env.queue.counts()["parked"] == 2
    assert {e["name"]: e["status"] for e in env.queue.entries()} == {"Typo": "pending", "Other": "pending"}

    env.queue.decide(typo, "edit", fields={"name": FITS[kind]})  # the reviewer shortens it: accepted
    env.queue.decide(other, "approve")
    assert env.worker().run() == {"completed": 2}
    assert env.queue.jobs("failed") == [] and offer_skus(env) == {"t1", "o1"}
    table = {"artist": "artists", "label": "labels", "style": "styles"}[kind]
    stored = rows(env, f"SELECT name FROM {table} ORDER BY id")
    assert stored == ([("Known",), (FITS[kind],), ("Other",)] if kind == "artist" else [(FITS[kind],)])
    assert_ids_consecutive(env.database_url)


def recordhound(env: ReviewEnv, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    settings = [arg for pair in env.settings() for arg in ("-s", pair)]
    return subprocess.run([sys.executable, "-m", "recordhound", "review", *settings, *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DATABASE_URL": env.database_url, "REDIS_URL": ""})


def test_recordhound_review_edit_says_the_name_is_too_long_in_one_line(env: ReviewEnv, tmp_path: Path) -> None:
    env.writer().write(env.source(), [release("t1", ["Typo"])])
    typo = entry_of(env, "Typo")
    for name, error in (("X" * 301, TOO_LONG[0][2]), ("ß" * 160, TOO_LONG[1][2])):
        done = recordhound(env, tmp_path, "edit", str(typo), "--set", f"name={name}", "--apply")
        assert (done.returncode, done.stderr, done.stdout) == (2, f"error: {error}\n", "")
    assert env.queue.jobs("approved") == [] and env.queue.jobs("failed") == []
    assert rows(env, "SELECT count(*) FROM artists") == [(0,)]
    done = recordhound(env, tmp_path, "edit", str(typo), "--set", "name=Typo Fixed", "--apply")
    assert done.returncode == 0 and "applied (1 decisions applied, 0 failed)" in done.stdout, done.stderr
    assert rows(env, "SELECT id, name FROM artists") == [(1, "Typo Fixed")]


def test_the_admin_edit_form_says_the_name_is_too_long(tmp_path: Path) -> None:
    with review_env("embedded", tmp_path) as env, admin_server(env, tmp_path) as base:
        env.writer().write(env.source(), [release("t1", ["Typo"])])
        typo = entry_of(env, "Typo")
        session, csrf = logged_in(base)
        for name, error in (("X" * 301, TOO_LONG[0][2]), ("ß" * 160, TOO_LONG[1][2])):
            page = session.post(f"{base}/admin/review/decide",
                                data={"entry_id": typo, "action": "edit", "name": name, "csrf_token": csrf})
            assert page.status_code == 200 and f'id="error">{error}</div>' in page.text, page.text[-1500:]
        assert env.queue.jobs("approved") == [] and [e["status"] for e in env.queue.entries()] == ["pending"]


@pytest.mark.parametrize("path", ["one_by_one", "batch"])
def test_an_edit_to_a_synonym_of_an_entity_attaches_the_entry_to_it(env: ReviewEnv, path: str) -> None:
    source = env.source()
    aphex = env.seed("artist", "Aphex Twin")["Aphex Twin"]
    assert aphex == 1
    with env.engine.begin() as conn:
        entities.attach(conn, "artist", {"AFX": aphex})
    env.writer().write(source, [release("e1", ["Aphex Twn"]), release("o1", ["Other"])])
    env.queue.decide(entry_of(env, "Aphex Twn"), "edit", fields={"name": "AFX"})
    if path == "batch":  # two decisions in one lease: apply_batch.write_batch
        env.queue.decide(entry_of(env, "Other"), "approve")
    assert env.worker().run() == {"completed": 2 if path == "batch" else 1}
    assert env.queue.jobs("failed") == []
    edit = next(j for j in env.queue.jobs("completed") if j["action"] == "edit")
    assert (edit["result"]["status"], edit["result"]["entity_id"]) == ("edited", 1)
    assert ("batch" in edit["result"]) == (path == "batch")  # written by apply_batch, not one by one after it failed
    env.writer().write(source, [release("e2", ["AFX"])])  # a later crawl of the synonym: the same artist
    artists = [(1, "Aphex Twin")] + ([(2, "Other")] if path == "batch" else [])
    assert rows(env, "SELECT id, name FROM artists ORDER BY id") == artists
    synonyms = [("AFX", 1), ("Aphex Twin", 1), ("Aphex Twn", 1)] + ([("Other", 2)] if path == "batch" else [])
    assert sorted(rows(env, "SELECT spelling, artist_id FROM artist_synonyms")) == synonyms
    offers = rows(env, "SELECT o.external_id, ra.artist_id FROM offers o JOIN release_artists ra "
                       "ON ra.release_id = o.release_id ORDER BY o.external_id")
    assert offers == [("e1", 1), ("e2", 1)] + ([("o1", 2)] if path == "batch" else [])
    assert_ids_consecutive(env.database_url)


@pytest.mark.parametrize("batch_size", [1, 500], ids=["one_by_one", "batch"])
def test_an_edit_to_a_spelling_an_earlier_decision_made_a_synonym_attaches_to_its_entity(
        env: ReviewEnv, batch_size: int) -> None:
    source = env.source()
    env.writer().write(source, [release("a1", ["Foo Bar"]), release("b1", ["F00 Bar"])])
    env.queue.decide(entry_of(env, "Foo Bar"), "edit", fields={"name": "Foo"})  # "Foo Bar" becomes a synonym of Foo
    env.queue.decide(entry_of(env, "F00 Bar"), "edit", fields={"name": "Foo Bar"})  # ... of Foo, as a crawl finds it
    assert env.worker(batch_size=batch_size).run() == {"completed": 2}
    assert [(j["result"]["status"], j["result"]["entity_id"]) for j in env.queue.jobs("completed")] == [
        ("edited", 1), ("edited", 1)]
    assert all(("batch" in j["result"]) == (batch_size > 1) for j in env.queue.jobs("completed"))
    assert rows(env, "SELECT id, name FROM artists ORDER BY id") == [(1, "Foo")]
    assert sorted(rows(env, "SELECT spelling, artist_id FROM artist_synonyms")) == [
        ("F00 Bar", 1), ("Foo", 1), ("Foo Bar", 1)]
    offers = rows(env, "SELECT o.external_id, ra.artist_id FROM offers o JOIN release_artists ra "
                       "ON ra.release_id = o.release_id ORDER BY o.external_id")
    assert offers == [("a1", 1), ("b1", 1)]
    assert_ids_consecutive(env.database_url)
