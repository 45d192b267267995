"""The review queue's contract, run on both backends (embedded + SQLite, Redis + PostgreSQL):
matching, parking, each decision, the apply worker's idempotence, failures, retries, TTL, prices."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import event, text

from recordhound.catalog.result import BatchResult
from recordhound.catalog.writer import CatalogWriter, ReviewPolicy
from recordhound.review.factory import open_queue
from recordhound.review.suggest import THRESHOLD
from recordhound.items import Release
from recordhound.review.queue import Origin, Parked, ReviewError, Unknown
from tests.integration.review_env import ReviewEnv, review_env


@pytest.fixture(params=["embedded", "redis"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env(request.param, tmp_path) as opened:
        yield opened


def release(sku: str, artists: list[str], label: str | None = None, styles: list[str] | None = None,
            price: str | None = "10.00", title: str | None = None) -> Release:
    return Release(source="demo", url=f"http://127.0.0.1/release/{sku}", external_id=sku,
                   title=title or f"Title {sku}", artists=artists, label=label, styles=styles or [],
                   price=None if price is None else Decimal(price), currency="EUR" if price else None)


def rows(env: ReviewEnv, sql: str, **params: object) -> list[tuple]:  # type: ignore[type-arg]
    with env.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params).all()]


def offer_skus(env: ReviewEnv) -> set[str]:
    return {sku for (sku,) in rows(env, "SELECT external_id FROM offers")}


def pending(env: ReviewEnv, name: str) -> dict:  # type: ignore[type-arg]
    found = [e for e in env.queue.entries() if e["name"] == name]
    assert len(found) == 1, f"{name!r} should be one pending entry: {env.queue.entries()}"
    return found[0]


def decide_and_apply(env: ReviewEnv, name: str, action: str, **options: object) -> dict:  # type: ignore[type-arg]
    env.queue.decide(pending(env, name)["id"], action, **options)  # type: ignore[arg-type]
    counts = env.worker().run()
    assert counts["failed"] == 0, env.queue.jobs("failed")
    return env.queue.jobs("completed")[-1]


def test_known_names_match_by_key_and_synonym_and_are_recorded(env: ReviewEnv) -> None:
    source = env.source()
    beatles = env.seed("artist", "The Beatles")["The Beatles"]
    hiphop = env.seed("style", "Hip Hop")["Hip Hop"]
    result = env.writer().write(source, [
        release("a1", ["Beatles, The"], styles=["Hip-Hop"]),
        release("a2", ["the beatles"], styles=["hip hop"]),
        release("a3", ["Beatles, The"]),
    ])
    assert result.counts["stored"] == 3 and result.counts["parked"] == 0
    synonyms = rows(env, "SELECT spelling, artist_id FROM artist_synonyms ORDER BY spelling")
    assert synonyms == [("Beatles, The", beatles), ("The Beatles", beatles), ("the beatles", beatles)]  # once each
    assert {s for (s,) in rows(env, "SELECT spelling FROM style_synonyms")} == {"Hip Hop", "Hip-Hop", "hip hop"}
    spellings = rows(env, "SELECT kind, spelling, entity_id FROM source_spellings WHERE source_id = :id", id=source)
    assert sorted(spellings) == [("artist", "Beatles, The", beatles), ("artist", "the beatles", beatles),
                                 ("style", "Hip-Hop", hiphop), ("style", "hip hop", hiphop)]
    assert env.queue.entries() == []


def test_unknown_names_park_items_once_per_name_with_counts_and_suggestions(env: ReviewEnv) -> None:
    source = env.source()
    env.seed("artist", "Daft Punk")
    writer = env.writer()
    writer.write(source, [release("b1", ["Daft Pnuk"], label="Warp"), release("b2", ["DAFT PNUK"])])
    writer.write(source, [release("b3", ["Daft Pnuk", "Aphex Twin"], label="Warp")])
    writer.write(source, [release("b3", ["Daft Pnuk", "Aphex Twin"], label="Warp")])  # the same page again
    entry = pending(env, "Daft Pnuk")
    assert entry["kind"] == "artist" and entry["waiting"] == 3
    assert sorted(entry["spellings"]) == ["DAFT PNUK", "Daft Pnuk"]
    assert entry["suggestions"][0]["name"] == "Daft Punk" and entry["suggestions"][0]["score"] >= THRESHOLD
    assert {s["ref"] for s in entry["sources"]} == {f"http://127.0.0.1/release/b{i}" for i in (1, 2, 3)}
    assert entry["sources"][0]["source_name"] == "demo" and entry["sources"][0]["source_id"] == source
    assert entry["sources"][0]["url"] == "http://127.0.0.1/release/b1"
    assert pending(env, "Warp")["waiting"] == 2 and pending(env, "Aphex Twin")["waiting"] == 1
    assert entry["attempts"] == 0 and entry["last_error"] is None and entry["created_at"] > 0
    assert offer_skus(env) == set()
    assert rows(env, "SELECT count(*) FROM artists") == [(1,)]
    assert env.queue.counts()["parked"] == 3


def test_trusted_source_creates_unknown_entities(env: ReviewEnv) -> None:
    source = env.source()
    result = env.writer(trusted=True).write(source, [release("t1", ["New Artist"], label="New Label")])
    assert result.counts["stored"] == 1 and result.counts["artists_new"] == 1
    assert rows(env, "SELECT id, name FROM artists") == [(1, "New Artist")]
    meta = rows(env, "SELECT metadata FROM sources")[0][0]
    meta = meta if isinstance(meta, dict) else __import__("json").loads(meta)
    assert meta["auto_approved"] == {"artists": 1, "labels": 1}
    assert env.queue.entries() == []


def test_a_trusted_source_follows_the_reviewer_s_decisions(env: ReviewEnv) -> None:
    """Trusted creates what nobody decided; a name a reviewer merged or skipped follows that decision
    there too (before, a trusted crawl created "APHEX TWIM" beside the merge target, and "Spam Bot",
    which untrusted crawls then matched as known)."""
    source = env.source()
    aphex = env.seed("artist", "Aphex Twin")["Aphex Twin"]
    known = env.seed("artist", "Known")["Known"]
    env.writer().write(source, [release("u1", ["Aphex Twim"]), release("u2", ["Known", "Spam Bot"])])
    decide_and_apply(env, "Aphex Twim", "merge", into=aphex)
    decide_and_apply(env, "Spam Bot", "skip")
    result = env.writer(trusted=True).write(source, [
        release("t1", ["APHEX TWIM"]), release("t2", ["Known", "Spam Bot"]), release("t3", ["Brand New"])])
    assert result.counts["stored"] == 3 and result.counts["artists_new"] == 1, dict(result.counts)
    env.writer().write(source, [release("u3", ["Spam Bot", "Known"])])  # untrusted again: still skipped
    assert rows(env, "SELECT id, name FROM artists ORDER BY id") == [
        (aphex, "Aphex Twin"), (known, "Known"), (3, "Brand New")]
    by_offer: dict[str, list[str]] = {}
    for sku, name in rows(env, "SELECT o.external_id, a.name FROM offers o JOIN release_artists ra "
                               "ON ra.release_id = o.release_id JOIN artists a ON a.id = ra.artist_id"):
        by_offer.setdefault(sku, []).append(name)
    assert by_offer == {"u1": ["Aphex Twin"], "u2": ["Known"], "t1": ["Aphex Twin"], "t2": ["Known"],
                        "t3": ["Brand New"], "u3": ["Known"]}
    assert env.queue.entries() == []


def test_approve_releases_items_when_their_last_entity_is_decided(env: ReviewEnv) -> None:
    source = env.source()
    env.writer().write(source, [release("c1", ["Solo"]), release("c2", ["Solo", "Duo"]),
                                release("c3", ["Duo"], label="Lbl")])
    job = decide_and_apply(env, "Solo", "approve")
    assert offer_skus(env) == {"c1"}
    assert job["result"]["items"] == {"stored": 1, "parked": 1}
    assert pending(env, "Duo")["waiting"] == 2
    decide_and_apply(env, "Duo", "approve")
    assert offer_skus(env) == {"c1", "c2"}
    decide_and_apply(env, "Lbl", "approve")
    assert offer_skus(env) == {"c1", "c2", "c3"}
    assert rows(env, "SELECT id, name FROM artists ORDER BY id") == [(1, "Solo"), (2, "Duo")]
    assert rows(env, "SELECT name FROM labels") == [("Lbl",)]
    assert env.queue.counts()["parked"] == 0 and env.queue.counts()["pending"] == 0
    assert rows(env, "SELECT a.name FROM release_artists ra JOIN artists a ON a.id = ra.artist_id "
                     "JOIN releases r ON r.id = ra.release_id WHERE r.title = 'Title c2' ORDER BY position"
                ) == [("Solo",), ("Duo",)]


def test_merge_makes_the_name_a_synonym_of_the_existing_entity(env: ReviewEnv) -> None:
    source = env.source()
    punk = env.seed("artist", "Daft Punk")["Daft Punk"]
    env.writer().write(source, [release("m1", ["Daft Pnuk"]), release("m2", ["DAFT PNUK"])])
    decide_and_apply(env, "Daft Pnuk", "merge", into=punk)
    assert rows(env, "SELECT id, name FROM artists") == [(punk, "Daft Punk")]
    assert sorted(rows(env, "SELECT spelling, artist_id FROM artist_synonyms")) == [
        ("DAFT PNUK", punk), ("Daft Pnuk", punk), ("Daft Punk", punk)]
    assert offer_skus(env) == {"m1", "m2"}
    assert {a for (a,) in rows(env, "SELECT artist_id FROM release_artists")} == {punk}
    env.writer().write(source, [release("m3", ["Daft Pnuk"])])  # seen again: matched straight away
    assert offer_skus(env) == {"m1", "m2", "m3"} and env.queue.entries() == []


def test_skip_drops_the_name_and_rejects_items_left_without_an_artist(env: ReviewEnv) -> None:
    source = env.source()
    env.seed("artist", "Known")
    env.writer().write(source, [release("s1", ["Known", "Noise"]),
                                release("s2", ["Noise"]), release("s3", ["Known"], label="Junk Label")])
    decide_and_apply(env, "Noise", "skip")
    assert offer_skus(env) == {"s1"}
    assert rows(env, "SELECT count(*) FROM release_artists") == [(1,)]
    rejected = env.queue.rejected()
    assert [r["key"] for r in rejected] == [f"{source}:s2"]
    assert "every artist was skipped" in rejected[0]["reason"] and rejected[0]["ref"].endswith("/s2")
    decide_and_apply(env, "Junk Label", "skip")
    assert offer_skus(env) == {"s1", "s3"}
    assert rows(env, "SELECT label_id FROM releases WHERE title = 'Title s3'") == [(None,)]
    env.writer().write(source, [release("s4", ["Known", "Noise"])])  # skipped names stay skipped
    assert offer_skus(env) == {"s1", "s3", "s4"} and env.queue.entries() == []


@pytest.mark.parametrize("how", ["invalid", "unreadable"])
def test_an_item_rejected_later_is_no_longer_held_by_its_old_parked_version(env: ReviewEnv, how: str) -> None:
    """Parked on an unknown artist by one crawl, then rejected by the next (its page now breaks the
    schema, or the writer could not read it): approving the artist must not store the old version."""
    source = env.source()
    env.writer().write(source, [release("k1", ["Newcomer"]), release("k2", ["Newcomer"])])
    assert env.queue.counts()["parked"] == 2
    writer = env.writer()
    if how == "invalid":
        result = writer.write(source, [release("k1", ["Newcomer"], title="x" * 600)])
    else:
        result = BatchResult(items=1)
        writer.reject(source, [(release("k1", ["Newcomer"]), "cannot be read by the writer")], result)
    assert result.counts["invalid"] == 1
    assert [r["key"] for r in env.queue.rejected()] == [f"{source}:k1"]
    assert pending(env, "Newcomer")["waiting"] == 1 and env.queue.counts()["parked"] == 1
    decide_and_apply(env, "Newcomer", "approve")
    assert offer_skus(env) == {"k2"}
    assert rows(env, "SELECT id FROM releases") == [(1,)]
    assert env.queue.counts()["parked"] == 0


@pytest.mark.parametrize("meanwhile", ["stored", "parked", "rejected"])
def test_a_crawl_between_the_apply_s_read_and_its_write_is_not_undone(
        env: ReviewEnv, monkeypatch: pytest.MonkeyPatch, meanwhile: str) -> None:
    """The apply worker reads the items an approved name held back, then writes them. A crawl's batch
    landing in between (a newer version stored, or parked on another new name, or rejected) wins:
    the old parked version is not written over it, nor parked again."""
    source = env.source()
    env.writer().write(source, [release("k1", ["Newcomer"], price="10.00"), release("k2", ["Newcomer"])])
    newer = {"stored": release("k1", ["Newcomer"], price="20.00", title="Title k1, remastered"),
             "parked": release("k1", ["Newcomer", "Stranger"], price="20.00", title="Title k1, remastered"),
             "rejected": release("k1", ["Newcomer"], title="x" * 600)}[meanwhile]
    read = env.queue.parked_items_many

    def a_crawl_meanwhile(entry_ids: list[int]) -> list[dict]:  # type: ignore[type-arg]
        found = read(entry_ids)
        monkeypatch.setattr(env.queue, "parked_items_many", read)
        env.writer().write(source, [newer])
        return found

    monkeypatch.setattr(env.queue, "parked_items_many", a_crawl_meanwhile)
    decide_and_apply(env, "Newcomer", "approve")
    offers = "SELECT o.external_id, o.price, r.title FROM offers o JOIN releases r ON r.id = o.release_id ORDER BY 1"
    k2 = ("k2", Decimal("10.00"), "Title k2")
    if meanwhile == "stored":
        assert rows(env, offers) == [("k1", Decimal("20.00"), "Title k1, remastered"), k2]
    else:
        assert rows(env, offers) == [k2]
    assert env.queue.counts()["parked"] == (1 if meanwhile == "parked" else 0)
    if meanwhile == "parked":
        decide_and_apply(env, "Stranger", "approve")
        assert rows(env, offers) == [("k1", Decimal("20.00"), "Title k1, remastered"), k2]
    assert [r["key"] for r in env.queue.rejected()] == ([f"{source}:k1"] if meanwhile == "rejected" else [])
    assert rows(env, "SELECT id FROM releases ORDER BY id") == [(1,), (2,)][:2 if meanwhile != "rejected" else 1]


def test_the_apply_s_rejection_of_an_old_version_leaves_a_newer_one_parked_meanwhile(
        env: ReviewEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """The only artist of a parked item is skipped: the apply rejects the version it read. A crawl
    that parked a newer version on another new name just before that rejection keeps it parked:
    approving that name stores the newer version (before, it was unparked and never stored)."""
    source = env.source()
    env.writer().write(source, [release("k1", ["Newcomer"], price="10.00")])
    newer = release("k1", ["Newcomer", "Stranger"], price="20.00", title="Title k1, remastered")
    reject = env.queue.reject

    def a_crawl_first(rejected, expected=None):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(env.queue, "reject", reject)
        assert env.writer().write(source, [newer]).counts["parked"] == 1
        return reject(rejected, expected)

    monkeypatch.setattr(env.queue, "reject", a_crawl_first)
    decide_and_apply(env, "Newcomer", "skip")
    assert env.queue.counts()["parked"] == 1 and env.queue.rejected() == []
    decide_and_apply(env, "Stranger", "approve")
    offers = "SELECT o.external_id, o.price, r.title FROM offers o JOIN releases r ON r.id = o.release_id"
    assert rows(env, offers) == [("k1", Decimal("20.00"), "Title k1, remastered")]


def test_two_crawls_of_one_item_an_older_park_never_lands_after_a_newer_store(env: ReviewEnv) -> None:
    """Two crawl writers hold one item at once (one shop item on two URLs, on two nodes): the first
    parks an older version (an unknown artist), slowly, while the second stores a newer one (the shop
    corrected the artist). Approving the unknown name later never writes the older version over the
    newer one: a crawl's park is ordered with the other's store by the product DB's write lock."""
    source = env.source()
    env.seed("artist", "Known Artist")
    first, second = (CatalogWriter(env.engine, timedelta(hours=1), open_queue(env.config()), ReviewPolicy(False, 5.0))
                     for _ in range(2))  # each with a queue connection of its own, as writer processes have
    older = release("k1", ["Newcomer"], price="10.00")
    newer = release("k1", ["Known Artist"], price="20.00", title="Title k1, corrected")
    parking, go = threading.Event(), threading.Event()
    park, failures = first.queue.park, []

    def park_slowly(*args, **kwargs):  # type: ignore[no-untyped-def]
        parking.set()
        go.wait(10)
        return park(*args, **kwargs)

    def run(writer: CatalogWriter, item: Release) -> None:
        try:
            writer.write(source, [item])
        except Exception as exc:  # noqa: BLE001 - the test fails with it below
            failures.append(exc)

    first.queue.park = park_slowly  # type: ignore[method-assign]
    crawls = [threading.Thread(target=run, args=(first, older))]
    crawls[0].start()
    assert parking.wait(30)
    crawls.append(threading.Thread(target=run, args=(second, newer)))
    crawls[1].start()
    crawls[1].join(0.5)  # the second crawl's batch goes as far as it can meanwhile
    go.set()
    for crawl in crawls:
        crawl.join(60)
    first.queue.close()
    second.queue.close()
    assert failures == [] and not any(crawl.is_alive() for crawl in crawls)
    offers = "SELECT o.external_id, o.price, r.title FROM offers o JOIN releases r ON r.id = o.release_id"
    assert rows(env, offers) == [("k1", Decimal("20.00"), "Title k1, corrected")]
    if [e for e in env.queue.entries() if e["name"] == "Newcomer"]:
        decide_and_apply(env, "Newcomer", "approve")
    assert rows(env, offers) == [("k1", Decimal("20.00"), "Title k1, corrected")]
    assert env.queue.counts()["parked"] == 0


def test_a_crawl_reads_every_name_for_its_suggestions_once_not_at_each_batch(env: ReviewEnv) -> None:
    """Suggestions for a new name come from an index of every name of its kind. A crawl's batch tells
    the review queue under the product DB's write lock, so the index is not built again for each batch
    that meets a new name (about a second at 100,000 names, every node waiting): a writer builds it
    once and again only when it is a minute old, after a commit. Counted from the SQL the database runs."""
    source = env.source()
    env.seed("artist", *[f"Known Artist {n}" for n in range(20)])
    whole_reads: list[str] = []

    def count(conn, cursor, statement, *args):  # type: ignore[no-untyped-def]
        if statement.startswith("SELECT artists.id, artists.name") and "WHERE" not in statement:
            whole_reads.append(statement)

    event.listen(env.engine, "before_cursor_execute", count)
    try:
        writer = env.writer()
        for n in range(5):
            assert writer.write(source, [release(f"n{n}", [f"Known Artst {n}"])]).counts["parked"] == 1
    finally:
        event.remove(env.engine, "before_cursor_execute", count)
    assert len(whole_reads) == 1, whole_reads
    assert [s["name"] for s in pending(env, "Known Artst 3")["suggestions"]][:1] == ["Known Artist 3"]


def test_edit_changes_the_name_then_approves(env: ReviewEnv) -> None:
    source = env.source()
    env.writer().write(source, [release("e1", ["Aphex Twim"])])
    entry = pending(env, "Aphex Twim")
    with pytest.raises(ReviewError, match="edit can set name"):
        env.queue.decide(entry["id"], "edit", fields={"year": "1999"})
    job = decide_and_apply(env, "Aphex Twim", "edit", fields={"name": "Aphex Twin"})
    assert job["result"]["status"] == "edited"
    assert rows(env, "SELECT name FROM artists") == [("Aphex Twin",)]
    assert sorted(rows(env, "SELECT spelling FROM artist_synonyms")) == [("Aphex Twim",), ("Aphex Twin",)]
    assert offer_skus(env) == {"e1"}
    env.writer().write(source, [release("e2", ["APHEX TWIM"])])  # the decided key, another spelling
    assert offer_skus(env) == {"e1", "e2"} and env.queue.entries() == []


def test_failed_job_keeps_error_and_attempts_and_can_be_retried(env: ReviewEnv) -> None:
    source = env.source()
    env.writer().write(source, [release("f1", ["Orphan"])])
    entry = pending(env, "Orphan")
    env.queue.decide(entry["id"], "merge", into=999)
    assert env.worker().run()["failed"] == 1
    [failed] = env.queue.jobs("failed")
    assert failed["attempts"] == 1 and "no such artist" in failed["last_error"]
    assert env.queue.entry(entry["id"])["last_error"] == failed["last_error"]
    env.queue.retry(failed["id"])
    assert env.queue.entry(entry["id"])["status"] == "queued"
    with pytest.raises(ReviewError, match="not pending"):
        env.queue.decide(entry["id"], "approve")
    assert env.worker().run()["failed"] == 1
    [failed] = env.queue.jobs("failed")
    assert failed["attempts"] == 2 and env.queue.entry(entry["id"])["attempts"] == 2
    target = env.seed("artist", "Orphans")["Orphans"]
    env.queue.decide(entry["id"], "merge", into=target)  # a new decision replaces the failed one
    assert env.worker().run()["completed"] == 1
    assert env.queue.jobs("failed") == []
    assert [j["result"]["status"] for j in env.queue.jobs("completed")] == ["superseded", "merged"]
    assert offer_skus(env) == {"f1"}
    with pytest.raises(ReviewError, match="not in the failed queue"):
        env.queue.retry(failed["id"])


def test_applying_a_job_twice_has_the_effect_of_once(env: ReviewEnv) -> None:
    source = env.source()
    env.writer().write(source, [release("i1", ["Twice", "Also"]), release("i2", ["Twice"])])
    env.queue.decide(pending(env, "Twice")["id"], "approve")
    worker = env.worker()
    job = env.queue.lease(worker.name, 30)
    assert job is not None
    before = None
    for _ in range(2):  # a worker killed after the writes, before the ack, runs it again
        entry = env.queue.entry(job["entry_id"])
        outcome = worker._write(job, entry)
        env.queue.settle(job, outcome)
        worker._release(job["entry_id"])
        snapshot = (rows(env, "SELECT id, name FROM artists"), rows(env, "SELECT spelling FROM artist_synonyms"),
                    sorted(offer_skus(env)), env.queue.counts())
        assert before is None or snapshot == before
        before = snapshot
    assert env.queue.complete(job, {"status": "approved"})
    assert not env.queue.complete(job, {"status": "approved"})  # acked once
    assert rows(env, "SELECT name FROM artists") == [("Twice",)] and offer_skus(env) == {"i2"}


def test_expired_lease_returns_the_job(env: ReviewEnv) -> None:
    source = env.source()
    env.writer().write(source, [release("l1", ["Leased"])])
    env.queue.decide(pending(env, "Leased")["id"], "approve")
    first = env.queue.lease("dead-worker", 0.01)
    assert first is not None and env.queue.lease("other", 30) is None
    import time
    time.sleep(0.05)
    again = env.queue.lease("other", 30)
    assert again is not None and again["id"] == first["id"] and again["attempts"] == 2
    assert not env.queue.complete({**first, "id": 10**9}, {})


def test_park_reports_items_whose_entry_was_decided_meanwhile(env: ReviewEnv) -> None:
    source = env.source()
    env.writer().write(source, [release("r1", ["Racer"])])
    entry = pending(env, "Racer")
    env.queue.decide(entry["id"], "skip")
    job = env.queue.lease("w", 30)
    env.queue.settle(job, {"status": "skipped", "entity_id": None})
    late = Parked(f"{source}:r2", {}, Origin(source, "demo", "x"), [Unknown("artist", "racer", "Racer")])
    assert env.queue.park([late], lambda *_: []) == [late]
    assert env.queue.decisions("artist", ["racer"])["racer"]["status"] == "skipped"


def test_ttl_moves_old_entries_to_failed_with_the_reason(env: ReviewEnv) -> None:
    source = env.source()
    env.writer().write(source, [release("x1", ["Stale"])])
    entry = pending(env, "Stale")
    assert env.queue.expire(3600) == []
    import time
    time.sleep(0.05)
    assert env.queue.expire(0.01) == [entry["id"]]
    [failed] = env.queue.jobs("failed")
    assert failed["action"] == "expire" and "RECORDHOUND_REVIEW_TTL_SECONDS" in failed["last_error"]
    assert env.queue.entries() == [] and env.queue.counts()["parked"] == 1  # nothing deleted
    env.queue.retry(failed["id"])
    assert pending(env, "Stale")["waiting"] == 1


def test_price_changes_above_the_threshold_wait_for_approval(env: ReviewEnv) -> None:
    source = env.source()
    writer = env.writer(trusted=True)
    writer.write(source, [release("p1", ["Artist"], price="100.00"), release("p2", ["Artist"], price="100.00"),
                          release("p3", ["Artist"], price="100.00")])
    result = writer.write(source, [release("p1", ["Artist"], price="104.00"),
                                   release("p2", ["Artist"], price="120.00"),
                                   release("p3", ["Artist"], price="50.00")])
    assert result.counts["price_changes"] == 1 and result.counts["prices_held"] == 2
    prices = dict(rows(env, "SELECT external_id, price FROM offers"))
    assert prices == {"p1": Decimal("104.00"), "p2": Decimal("100.00"), "p3": Decimal("100.00")}
    held = {e["external_id"]: e for e in env.queue.entries(kind="price")}
    assert held["p2"]["change_pct"] == 20.0 and held["p2"]["old_price"] == "100.00"
    assert held["p2"]["new_price"] == "120.00" and held["p3"]["change_pct"] == -50.0  # a decrease is negative
    writer.write(source, [release("p2", ["Artist"], price="120.00")])  # seen again: still one entry
    assert len(env.queue.entries(kind="price")) == 2
    env.queue.decide(held["p2"]["id"], "approve")
    env.queue.decide(held["p3"]["id"], "skip")
    assert env.worker().run()["completed"] == 2
    prices = dict(rows(env, "SELECT external_id, price FROM offers"))
    assert prices == {"p1": Decimal("104.00"), "p2": Decimal("120.00"), "p3": Decimal("100.00")}
    history = rows(env, "SELECT o.external_id, h.old_price, h.new_price FROM offer_history h "
                        "JOIN offers o ON o.id = h.offer_id ORDER BY h.id")
    assert history == [("p1", Decimal("100.00"), Decimal("104.00")), ("p2", Decimal("100.00"), Decimal("120.00"))]
    writer.write(source, [release("p3", ["Artist"], price="50.00")])  # rejected: not asked again
    assert env.queue.entries(kind="price") == []


def test_a_stale_price_approval_is_superseded_not_applied(env: ReviewEnv) -> None:
    source = env.source()
    writer = env.writer(trusted=True)
    writer.write(source, [release("p1", ["Artist"], price="100.00")])
    writer.write(source, [release("p1", ["Artist"], price="120.00")])  # +20 %: held
    (held,) = env.queue.entries(kind="price")
    env.queue.decide(held["id"], "approve")  # decided, not yet applied (a pending one would be withdrawn now)
    writer.write(source, [release("p1", ["Artist"], price="102.00")])  # +2 %: written meanwhile
    assert env.worker().run()["completed"] == 1
    assert rows(env, "SELECT price FROM offers") == [(Decimal("102.00"),)]  # the newer price stays
    history = rows(env, "SELECT old_price, new_price FROM offer_history ORDER BY id")
    assert history == [(Decimal("100.00"), Decimal("102.00"))]
    (job,) = env.queue.jobs("completed")
    assert job["result"]["status"] == "superseded" and "no longer 100.00" in job["result"]["reason"]
    assert env.queue.entry(held["id"])["status"] == "superseded"


def test_a_worker_whose_lease_another_took_over_acks_nothing(env: ReviewEnv) -> None:
    env.writer().write(env.source(), [release("w1", ["Someone"])])
    env.queue.decide(pending(env, "Someone")["id"], "approve")
    (slow,) = env.queue.lease_many("W1", 0.2, 10)
    time.sleep(0.4)  # its lease runs out: another worker takes the job over
    (took,) = env.queue.lease_many("W2", 30, 10)
    assert env.queue.renew([slow], 30) == [] and env.queue.complete_many([(slow, {"status": "approved"})]) == []
    assert env.queue.complete_many([(took, {"status": "approved"})]) == [took["id"]]
