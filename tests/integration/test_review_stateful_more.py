"""The review machine of test_review_stateful.py with three more rules, on both backends:

- a review queue that refuses the apply worker for good (Redis: the entries' hash is a string, another
  program's key under the prefix; embedded: the queue file is read-only to the worker): it stops with a
  ``RefusalError``; nothing is written, failed or completed; the jobs it leased wait in the approved queue;
- the apply worker with a time-to-live: it expires the entries pending now (each an expire job in the
  failed queue) before it leases, then drains the queue;
- bulk decisions (``recordhound review approve|skip|merge ID... | --all | --type T`` and the admin's bulk
  approve/skip, in batches of 1, 2 or 500 per queue transaction): one job per entry chosen, or none at all
  when a named entry is decided already (the CLI), or that entry passed over (the admin).

Left out: an edit that names a spelling of another undecided entry. Applied one by one, its entity then takes
that entry's other spellings by key (the gate uses a known entity straight away), applied in one batch not:
the order of application decides (a fix that parked such spellings until their own entry's decision was
tried and reverted: it parked a trusted source's names for good under expired entries; see the note of
7 December 2026).

The model follows from the decisions alone (``review_model.py``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from recordhound.catalog.apply import ApplyWorker
from recordhound.catalog.errors import RefusalError
from recordhound.review import bulk
from recordhound.review.docstore import RedisDocStore, SqliteDocStore
from recordhound.review.queue import ReviewError, ReviewQueue
from tests.integration.review_model import KINDS, Job, Name, PriceEntry
from tests.integration.test_review_stateful import ReviewMachine, run_machine

REFUSED_SECONDS = 20  # what a refused worker is given before the rule calls it a hang (waiting, forever)


class MoreReviewMachine(ReviewMachine):
    @precondition(lambda self: any(j.state in ("approved", "processing") for j in self.jobs.values()))
    @rule(batch_size=st.sampled_from([1, 500]))
    def the_review_queue_refuses_the_apply_worker(self, batch_size: int) -> None:
        """Redis: leased (expired leases back first), refused reading the entries, given back; embedded:
        refused at the lease, nothing moved. Either way the worker stops, and nothing is written."""
        deadline = time.monotonic() + REFUSED_SECONDS
        with self.refusing_queue() as queue:
            worker = ApplyWorker(self.env.engine, queue, self.env.writer(), self.env.config(batch_size=batch_size))
            with pytest.raises(RefusalError, match="review queue"):
                worker.run(stop=lambda: time.monotonic() > deadline)
        if self.env.backend == "redis":
            for job in self.lease(worker.name, batch_size):
                job.state, job.holder = "approved", None

    def refusing_queue(self) -> _Refusing:
        return _Refusing(self.env.queue, self.env.queue_path, self.env.prefix)

    @rule(batch_size=st.sampled_from([1, 500]))
    def the_apply_worker_expires_the_pending_entries_then_drains(self, batch_size: int) -> None:
        known = set(self.jobs)
        worker = self.env.worker(batch_size=batch_size, ttl_seconds=1e-6)
        worker.run()
        self.expired([int(j["entry_id"]) for j in self.env.queue.jobs("failed")
                      if j["action"] == "expire" and int(j["id"]) not in known])
        while taken := self.lease(worker.name, batch_size):
            for job in taken:
                self.applied(job, worker.name)

    @precondition(lambda self: self.names)
    @rule(how=st.sampled_from(["ids", "every", "type", "admin"]), action=st.sampled_from(["approve", "skip", "merge"]),
          picks=st.lists(st.integers(0, 20), min_size=1, max_size=4), into=st.integers(0, 1),
          batch_size=st.sampled_from([1, 2, 500]), decided=st.booleans())
    def a_bulk_decision(self, how: str, action: str, picks: list[int], into: int, batch_size: int,
                        decided: bool) -> None:
        """By ids (the CLI: refused whole when one is decided already; the admin: that one passed over), every
        undecided entry, or those of one type; a merge into a seeded entity of the entries' type."""
        listed = self.listed()
        kind = (*KINDS, "price")[picks[0] % 4]
        if how in ("ids", "admin"):
            picked = [listed[p % len(listed)] for p in picks] if listed else []
            chosen = list({self.id_of(e): e for e in picked}.values())
        else:
            chosen = [e for e in listed if how == "every" or self.kind_of(e) == kind]
        if action == "merge" and (how == "every" or any(self.kind_of(e) != self.kind_of(chosen[0]) for e in chosen)
                                  or how == "admin" or (chosen and self.kind_of(chosen[0]) == "price")):
            action = "approve"  # a merge names an entity of one type (the admin's merge is by suggestion)
        target = self.merge_target(self.kind_of(chosen[0]) if chosen else "artist", into)
        stale = self.decided_entry() if decided and how in ("ids", "admin") else None
        ids = [self.id_of(e) for e in chosen] + ([stale] if stale is not None else [])
        if not ids:
            return
        if how == "admin":
            decisions, left = bulk.by_ids(self.env.queue, self.env.engine, ids, action)
        else:
            selection = bulk.Selection(ids=tuple(ids)) if how == "ids" else bulk.Selection(
                every=True, kind=None if how == "every" else kind)
            merge_into = target[1] if action == "merge" else None
            if stale is not None:
                with pytest.raises(ReviewError, match="not pending; nothing was decided"):
                    bulk.plan(self.env.queue, self.env.engine, selection, action, merge_into)
                return
            decisions, left = bulk.plan(self.env.queue, self.env.engine, selection, action, merge_into)
        assert left == []
        jobs, passed = bulk.record(self.env.queue, decisions, batch_size, None, how == "admin")
        assert passed == ([stale] if stale is not None else [])
        assert [int(j["entry_id"]) for j in jobs] == [self.id_of(e) for e in chosen]
        for entry, job in zip(chosen, jobs):
            self.queued(entry, int(job["id"]), action, target[0])

    def listed(self) -> list[Name | PriceEntry]:
        """The undecided entries the queue lists (oldest first), their ids learnt from the list."""
        found: list[tuple[int, Name | PriceEntry]] = []
        for shown in self.env.queue.entries():
            if shown["kind"] == "price":
                (entry,) = [es[-1] for sku, es in self.price_entries.items() if sku == shown["external_id"]]
                entry.id = int(shown["id"])
                found.append((entry.id, entry))
            else:
                name = self.names[(shown["kind"], shown["name_key"])]
                name.entry_id = int(shown["id"])
                found.append((name.entry_id, name))
        return [entry for _, entry in sorted(found, key=lambda pair: pair[0])]

    @staticmethod
    def kind_of(entry: Name | PriceEntry) -> str:
        return entry.kind if isinstance(entry, Name) else "price"

    @staticmethod
    def id_of(entry: Name | PriceEntry) -> int:
        found = entry.entry_id if isinstance(entry, Name) else entry.id
        assert found is not None
        return found

    def merge_target(self, kind: str, into: int) -> tuple[str, int]:
        seeded = [(key, i) for (k, key), i in sorted(self.seeded.items()) if k == kind] or [("", 0)]
        return seeded[into % len(seeded)]

    def decided_entry(self) -> int | None:
        """The id of an entry decided (or expired) already, if the model knows one."""
        ids = [m.entry_id for m in self.names.values() if m.state not in ("pending", "failed") and m.entry_id]
        ids += [e.id for es in self.price_entries.values() for e in es if e.status != "pending" and e.id]
        return min(ids) if ids else None

    def queued(self, entry: Name | PriceEntry, job_id: int, action: str, target: str) -> None:
        if isinstance(entry, PriceEntry):
            entry.status = "queued"
            self.jobs[job_id] = Job(job_id, action, price=entry)
            return
        outcome = {"approve": ("approved", entry.key), "skip": ("skipped", None), "merge": ("merged", target)}
        self.decided(entry, job_id, action, outcome[action])


class _Refusing:
    """A review queue that refuses the worker for good while the ``with`` lasts."""

    def __init__(self, queue: ReviewQueue, path: str, prefix: str) -> None:
        self.queue, self.path, self.prefix = queue, path, prefix
        self.mend: Callable[[], None] = lambda: None

    def __enter__(self) -> ReviewQueue:
        store = self.queue.store
        if isinstance(store, RedisDocStore):
            entries = f"{self.prefix}:review:entries"
            store.client.rename(entries, f"{entries}:kept")
            store.client.set(entries, "not a hash")
            self.mend = lambda: store.client.rename(f"{entries}:kept", entries)
            return self.queue
        refused = SqliteDocStore.__new__(SqliteDocStore)  # the same file, opened read-only
        refused.path, refused._lock = self.path, threading.Lock()
        refused.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=60, isolation_level=None,
                                     check_same_thread=False)
        self.mend = refused.close
        return ReviewQueue(refused)

    def __exit__(self, *exc: object) -> None:
        self.mend()


@pytest.mark.parametrize("backend", ["embedded", "redis"])
def test_refusals_ttl_and_bulk_decisions(backend: str, tmp_path: Path) -> None:
    run_machine(MoreReviewMachine, backend, tmp_path, 40)
