"""The apply worker: turns each decision of the approved queue into product-DB writes.

One job: lease it, write (idempotently: an entity is found by its key before it is created, a
synonym is added only when missing, a price only when it is still the old one), settle the
entry (decided from now on), release the items it held back through the same writer the
crawler uses, ack. A worker killed anywhere leaves the job leased; when the lease runs out
another worker (or the same one, restarted) does it again, and the writes find their rows.

An outage of the product DB or of the review queue (``catalog.errors.is_transient``) fails no job:
the worker waits (0.5 s doubling to ``OUTAGE_CAP_SECONDS``) and applies the same jobs again, as a
restarted worker would; only an error of the decision itself (a merge into a missing entity, a value
the database refuses) fails its job. A store that refuses the worker for good (``catalog.errors.REFUSALS``:
a read-only or un-migrated database, a role without write permission, a queue key of the wrong type)
stops it with a ``RefusalError`` that says what to do; the jobs it held go back to the approved queue.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from recordhound.config import ReviewConfig
from recordhound.db import entities
from recordhound import failpoints
from recordhound.db.engine import lock_for_writing
from recordhound.db.offers import set_price
from recordhound.backoff import backoff_seconds
from recordhound.catalog.errors import RefusalError, is_transient, refusal, refused
from recordhound.exceptions import reason
from recordhound.catalog.apply_batch import edited_or_entry_name, own_spellings, write_batch
from recordhound.catalog.writer import CatalogWriter
from recordhound.review import gate
from recordhound.review.items import release_from_doc
from recordhound.review.queue import DECIDED, ReviewError, ReviewQueue
from recordhound.text import name_key

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)
Doc = dict[str, Any]
Progress = Callable[[Counter[str], float], None]
OUTAGE_CAP_SECONDS = 30.0  # the longest wait between two tries of a batch while a store is away


class Unavailable(Exception):
    """The product DB or the review queue is away: the batch is tried again (``ApplyWorker.run``)."""


def open_worker(settings: BaseSettings) -> ApplyWorker:
    """An apply worker over the settings' product database and review queue."""
    from recordhound.config import StoreConfig
    from recordhound.db.migrate import open_database
    from recordhound.catalog.writer import open_writer

    store, review = StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings)
    engine = open_database(store.database_url)
    try:
        writer = open_writer(engine, store, review, trusted=False)
    except BaseException:
        engine.dispose()  # (``apply --follow`` tries again while the review queue does not answer)
        raise
    return ApplyWorker(engine, writer.queue, writer, review)


class ApplyWorker:
    def __init__(self, engine: Engine, queue: ReviewQueue, writer: CatalogWriter, config: ReviewConfig) -> None:
        self.engine, self.queue, self.writer, self.config = engine, queue, writer, config
        self.name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"  # two workers of one process differ
        self.counts: Counter[str] = Counter()
        self.busy = False  # it holds a batch, from its lease to its acks (a first stop waits: ``catalog.stop``)

    def run(self, follow: bool = False, stop: Any = None, progress: Progress | None = None) -> Counter[str]:
        """Apply approved jobs until the queue is empty (or, with ``follow``, until ``stop()``).

        Jobs are leased and written in batches of ``batch_size``; ``progress(counts, seconds)``
        is called after each batch. Following, a review queue that does not answer when the worker leases is
        waited for (one line per try); a one-off run ends on it."""
        started = last_log = time.monotonic()
        logger.info("Apply worker %s: applying the decisions of the %s review queue%s", self.name,
                    self.config.backend, " as they come" if follow else "")
        outage = 0
        try:
            while stop is None or not stop():
                self.busy = True
                try:
                    jobs = self._lease()
                except Exception as exc:
                    self.busy = False
                    if not follow or not self._unanswered(exc):
                        raise
                    outage += 1
                    delay = backoff_seconds(outage, OUTAGE_CAP_SECONDS)
                    logger.warning("The review queue is unreachable (%s): leasing again in %.1f s", reason(exc), delay)
                    self.counts["outage_waits"] += 1
                    _wait(delay, stop)
                    continue
                outage = 0
                if jobs:
                    self._apply_through_outages(jobs, stop)
                self.busy = False
                if not jobs:
                    if not follow:
                        break
                    time.sleep(self.config.poll_seconds)
                    continue
                if progress is not None:
                    progress(self.counts, time.monotonic() - started)
                if time.monotonic() - last_log >= 10:
                    last_log = time.monotonic()
                    logger.info("Applied %d jobs (%.1f/s), %d failed", self.counts["completed"],
                                self.counts["completed"] / (last_log - started), self.counts["failed"])
        finally:
            self.busy = False  # (an error ends the run: a stop then is heard at once)
        return self.counts

    def _refused(self, exc: BaseException) -> RefusalError | None:
        return refused(exc, self.engine.url.render_as_string(hide_password=True))

    def _unanswered(self, exc: Exception) -> bool:
        """The review queue's Redis does not answer now, or answers that it cannot serve yet (what a command
        says as ``Unavailable``, exit 75): a following worker waits for it. Not one that refuses (a password,
        a database index), nor an error of a command it sent (an unknown command, a key of another type).
        The embedded queue's file: locked by another process, a disk error (its refusals, a read-only or
        corrupt file, are a ``RefusalError`` by now)."""
        from recordhound.preflight import redis_not_answering

        return redis_not_answering(exc) if self.config.redis_url else is_transient(exc)

    def _lease(self) -> list[Doc]:
        """The next batch of jobs (entries past their time-to-live expired first); a refusal of the review
        queue stops the worker here too (``RefusalError``)."""
        try:
            if self.config.ttl_seconds:
                for entry_id in self.queue.expire(self.config.ttl_seconds):
                    logger.warning("Review entry %s expired (RECORDHOUND_REVIEW_TTL_SECONDS): moved to failed",
                                   entry_id)
            return self.queue.lease_many(self.name, self.config.lease_seconds, self.config.batch_size)
        except Exception as exc:
            if (stopped := self._refused(exc)) is not None:
                raise stopped from exc
            raise

    def _apply_through_outages(self, jobs: list[Doc], stop: Any) -> None:
        """``apply_many``, again while a store is away, with the jobs this worker still holds when it is
        back (``renew``: not those it acked or failed before the outage, nor those another worker took
        once their lease ran out); its writes are idempotent (what was written is found). A stop while
        waiting leaves the jobs leased (their lease runs out, as a killed worker's). A refusal stops the worker,
        the jobs given back."""
        attempt = 0
        while True:
            try:
                if attempt:
                    jobs = self.queue.renew(jobs, self.config.lease_seconds)
                self.apply_many(jobs)
                return
            except Exception as exc:
                if (stopped := self._refused(exc)) is not None:
                    self._give_back(jobs)  # no wait cures it: the next worker applies them at once
                    raise stopped from exc
                if not isinstance(exc, Unavailable) and not is_transient(exc):  # an ack or a failure not recorded
                    raise
                attempt += 1
                delay = backoff_seconds(attempt, OUTAGE_CAP_SECONDS)
                logger.warning("The product database or the review queue is unreachable (%s): of the %d jobs leased, "
                               "applying them again in %.1f s those not done (try %d)", exc, len(jobs), delay, attempt)
                self.counts["outage_waits"] += 1
                if _wait(delay, stop):
                    return

    def _give_back(self, jobs: list[Doc]) -> None:
        try:
            given = self.queue.give_back(jobs)
        except Exception as exc:  # noqa: BLE001 - the queue refuses too: the leases run out instead
            logger.warning("Could not give back the %d jobs leased (%s): they return to the approved queue when "
                           "their lease runs out (RECORDHOUND_APPLY_LEASE_SECONDS)", len(jobs), reason(exc))
            return
        logger.info("Gave back %d jobs to the approved queue", len(given))

    def apply_many(self, jobs: list[Doc]) -> None:
        """Price changes one by one; decisions on names in one transaction (see ``apply_batch``)."""
        names = [job for job in jobs if job["kind"] != "price"]
        for job in jobs:
            if job["kind"] == "price" or len(names) == 1:
                self.apply_one(job)
        if len(names) < 2:
            return
        try:
            entries = self.queue.entries_by_id([int(job["entry_id"]) for job in names])
            with self.engine.begin() as conn:
                lock_for_writing(conn)
                outcomes = write_batch(conn, names, entries)
        except Exception as exc:  # noqa: BLE001 - one bad job must not fail the others: one by one finds it
            if _not_the_jobs(exc):
                raise Unavailable(reason(exc)) from exc
            logger.warning("%d decisions could not be written together (%s: %s): applying them one by one",
                           len(names), type(exc).__name__, exc)
            for job in names:
                self.apply_one(job)
            return
        self._finish_batch(names, outcomes)

    def _finish_batch(self, jobs: list[Doc], outcomes: list[Doc]) -> None:
        """Settle the entries, release the items they held back, ack (the batch's writes are committed)."""
        try:
            failpoints.hit("apply.after_write")
            if self.config.ack_delay_seconds:
                time.sleep(self.config.ack_delay_seconds)
            self.queue.settle_many(list(zip(jobs, outcomes)))
            failpoints.hit("apply.after_settle")
            released = self._release_many([int(job["entry_id"]) for job in jobs])
        except Exception as exc:  # noqa: BLE001 - as apply_one: the jobs fail, never the worker
            if _not_the_jobs(exc):
                raise Unavailable(reason(exc)) from exc
            error = f"{type(exc).__name__}: {exc}"
            logger.error("A batch of %d jobs failed after its writes: %s", len(jobs), error)
            for job in jobs:
                self.queue.fail(job, error)
            self.counts["failed"] += len(jobs)
            return
        batch = {"jobs": len(jobs), "items": dict(released)}  # items are released for the batch as a whole
        acked = self.queue.complete_many([(job, {**outcome, "items": {}, "batch": batch})
                                          for job, outcome in zip(jobs, outcomes)])
        self.counts["completed"] += len(acked)
        logger.info("Applied %d decisions in one batch; items released: %s", len(acked), dict(released) or "none")

    def apply_one(self, job: Doc) -> Doc | None:
        try:
            entry = self.queue.entry(job["entry_id"])
            if entry["kind"] == "price" and entry["status"] in DECIDED and entry.get("decision") == job["id"]:
                outcome = {"status": entry["status"], "entity_id": None, "offer_id": entry.get("offer_id")}
            else:  # (a price this job settled before an outage is written: the price may have moved since)
                outcome = self._write(job, entry)
                failpoints.hit("apply.after_write")
                if self.config.ack_delay_seconds:
                    time.sleep(self.config.ack_delay_seconds)
                self.queue.settle(job, outcome)
                failpoints.hit("apply.after_settle")
            released = self._release(int(job["entry_id"])) if entry["kind"] != "price" else Counter()
        except Exception as exc:  # noqa: BLE001 - any error fails this job, never the worker
            if _not_the_jobs(exc):
                raise Unavailable(reason(exc)) from exc
            error = f"{type(exc).__name__}: {exc}"
            logger.error("Job %s (%s entry %s) failed: %s", job["id"], job["action"], job["entry_id"], error)
            self.queue.fail(job, error)
            self.counts["failed"] += 1
            return None
        result = {**outcome, "items": dict(released)}
        if self.queue.complete(job, result):
            self.counts["completed"] += 1
            logger.info("Job %s applied: %s %s entry %s → %s; items released: %s", job["id"], job["action"],
                        entry["kind"], job["entry_id"], outcome, dict(released) or "none")
        return result

    def _write(self, job: Doc, entry: Doc) -> Doc:
        if entry["kind"] == "price":
            return self._price(job, entry)
        action, kind = job["action"], entry["kind"]
        if action == "skip":
            return {"status": "skipped", "entity_id": None}
        with self.engine.begin() as conn:
            lock_for_writing(conn)
            if action == "merge":
                entity_id = int(job["into"])
                if not entities.exists(conn, kind, entity_id):
                    raise ReviewError(f"cannot merge into {kind} {entity_id}: no such {kind}")
                status = "merged"
            else:
                name = edited_or_entry_name(job, entry)
                found = entities.find(conn, kind, name)  # an edit to a known synonym: its entity, as the gate
                if found is None:
                    entity_id = entities.create_unknown(conn, kind, {name_key(name): [name]})[name]
                else:
                    entity_id = found
                status = "edited" if action == "edit" else "approved"
            own = own_spellings(entry)
            spellings = [s for s in own if s not in entities.known_spellings(conn, kind, own)]
            entities.attach(conn, kind, dict.fromkeys(spellings, entity_id))
        return {"status": status, "entity_id": entity_id}

    def _price(self, job: Doc, entry: Doc) -> Doc:
        if job["action"] == "skip":
            return {"status": "rejected", "entity_id": None}
        change = job.get("change") or entry  # the change approved (a job queued before jobs kept it: its entry)
        new_price = None if change["new_price"] is None else Decimal(change["new_price"])
        old_price = None if change["old_price"] is None else Decimal(change["old_price"])
        with self.engine.begin() as conn:
            lock_for_writing(conn)
            try:
                done = set_price(conn, entry["offer_id"], new_price, change["new_currency"], datetime.now(UTC),
                                 expected=(old_price, change["old_currency"]))
            except LookupError as exc:
                raise ReviewError(str(exc)) from exc
        if done == "superseded":
            reason = (f"not applied: the offer's price changed after this change was held "
                      f"(it is no longer {change['old_price']} {change['old_currency'] or ''})").rstrip()
            return {"status": "superseded", "entity_id": None, "offer_id": entry["offer_id"], "reason": reason}
        return {"status": "approved", "entity_id": None, "offer_id": entry["offer_id"]}

    def _release(self, entry_id: int) -> Counter[str]:
        return self._release_many([entry_id])

    def _release_many(self, entry_ids: list[int]) -> Counter[str]:
        """The items these entries held back go through the writer again: stored, still parked
        (on another pending name), or rejected (a skip took their only artist)."""
        counts: Counter[str] = Counter()
        by_source: dict[int, list[Doc]] = {}
        for parked in self.queue.parked_items_many(entry_ids):
            by_source.setdefault(int(parked["source_id"]), []).append(parked)
        for source_id, docs in by_source.items():
            items = [release_from_doc(doc["item"]) for doc in docs]
            read = {gate.item_key(source_id, item): doc for item, doc in zip(items, docs)}
            result = self.writer.write(source_id, items, trusted=False, parked=read)  # only what is still parked so
            counts.update({k: v for k, v in result.counts.items()
                           if k in ("stored", "parked", "rejected", "prices_held", "superseded") and v})
        return counts


def _not_the_jobs(exc: BaseException) -> bool:
    """An outage (waited out) or a refusal (stops the worker): no job's own failure; ``_apply_through_outages``
    decides which."""
    return is_transient(exc) or refusal(exc) is not None


def _wait(seconds: float, stop: Callable[[], bool] | None) -> bool:
    """Sleep ``seconds``, or less if ``stop()`` turns true meanwhile (then True)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if stop is not None and stop():
            return True
        time.sleep(min(0.1, seconds))
    return False
