"""The catalog writer: one transaction per batch of items, idempotent by natural key."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, select, update

from recordhound import failpoints
from recordhound.config import ReviewConfig, StoreConfig
from recordhound.catalog import errors, validate
from recordhound.catalog.result import BatchResult
from recordhound.db import entities, sources
from recordhound.db.engine import lock_for_writing, writing
from recordhound.db.ids import align_sequences
from recordhound.db.keys import release_key
from recordhound.db.models import Base, Source
from recordhound.db.statistics import Statistics
from recordhound.db.offers import HeldPrice, OfferRow, write_offers
from recordhound.recent import Recent
from recordhound.db.releases import ReleaseRow, Wanted, by_barcode, by_catalog_numbers, by_names, stored_keys, write_releases
from recordhound.items import Offer, Release
from recordhound.review import gate
from recordhound.review.items import rejected_doc
from recordhound.review.factory import open_queue
from recordhound.review.docstore import Doc
from recordhound.review.queue import Parked, PriceHold, ReviewQueue
from recordhound.review.suggest import NameIndex
from recordhound.text import catalog_number_key, name_key


@dataclass(frozen=True)
class ReviewPolicy:
    trusted: bool = False  # create unknown entities (auto-approved) instead of parking items
    price_threshold_pct: float = 5.0


MATCHES_KEPT = 8192  # (source, kind, spelling, entity id) a writer remembers as recorded (~2 MB)
Match = tuple[int, str, str, int]  # (source id, entity kind, spelling, entity id)


class CatalogWriter:
    """Writes batches of items through the review gate: matched items are upserted, the rest
    parked or rejected in the review queue. Idempotent: the same batch twice changes nothing more."""

    def __init__(self, engine: Engine, last_seen_resolution: timedelta, queue: ReviewQueue,
                 policy: ReviewPolicy = ReviewPolicy(), analyze_rows: int = 100_000,
                 matches_kept: int = MATCHES_KEPT) -> None:
        self.engine, self.queue, self.policy = engine, queue, policy
        self.statistics = Statistics(engine, PRODUCT_TABLES, analyze_rows)
        self.last_seen_resolution = last_seen_resolution
        self._source_names: dict[int, str] = {}  # a source's name never changes
        # spellings recorded lately (source_spellings): a batch looks up only the others (a crawl names
        # more artists and labels than a writer can hold all crawl long; a forgotten one is read again)
        self.recorded: Recent[Match] = Recent(matches_kept)
        self.name_indexes: dict[str, tuple[float, NameIndex]] = {}  # kind → (built at, index): ``_suggest``

    def write(self, source_id: int, items: list[Release], trusted: bool | None = None,
              parked: dict[str, Doc] | None = None) -> BatchResult:
        """Product-DB writes commit first, then the queue is told: a crash in between re-runs
        the batch (the frontier never acked it), which finds the rows already there. A stored
        item is no longer parked from inside the same product-DB write lock.

        ``parked``: the apply worker releasing items an entry held back (item key → the parked
        version it read). Only the items still parked as read are written, under the write lock;
        one a crawl stored, parked again or rejected since is left as the crawl left it (counted
        ``superseded``), and only the versions read are unparked.

        An item that breaks the schema is rejected with its reason before anything is written;
        one the database still refuses (a constraint) is found by writing the batch one item
        at a time, and only that item is rejected. Transient errors (the database or the review
        queue unreachable) propagate: the caller retries the whole batch."""
        trust = self.policy.trusted if trusted is None else trusted
        todo = list({item.external_id: item for item in items}.values())
        result = BatchResult(items=len(todo))
        name = self._source_name(source_id)
        problems = [(item, _problem(item)) for item in todo]  # each item checked once
        self._reject(source_id, name, [(item, reason) for item, reason in problems if reason is not None], result,
                     parked)
        valid = [item for item, reason in problems if reason is None]
        try:
            self._write_valid(source_id, name, valid, trust, result, parked)
        except Exception as exc:
            if not errors.is_row_error(exc) or len(valid) < 2:
                if errors.is_row_error(exc):
                    self._reject(source_id, name, [(valid[0], errors.describe(exc))], result, parked)
                    return result
                raise
            for item in valid:  # find the item the database refuses; the others are written
                try:
                    self._write_valid(source_id, name, [item], trust, result, parked)
                except Exception as item_exc:
                    if not errors.is_row_error(item_exc):
                        raise
                    self._reject(source_id, name, [(item, errors.describe(item_exc))], result, parked)
        return result

    def _write_valid(self, source_id: int, name: str, todo: list[Release], trust: bool,
                     result: BatchResult, parked: dict[str, Doc] | None) -> None:
        counts: Counter[str] = Counter()
        for _ in range(RACE_ROUNDS):
            problems: list[tuple[str, str, str]] = []
            with self.engine.begin() as conn:
                lock_for_writing(conn)
                if parked is not None:
                    todo = self._still_parked(source_id, todo, parked, counts)
                plan = gate.plan(conn, self.queue, source_id, name, todo, trust)
                held, at_stored = _write(conn, source_id, plan, self.last_seen_resolution,
                              self.policy.price_threshold_pct, counts, problems)
                recorded = self._record_matches(conn, source_id, plan)
                if parked is None:  # a crawl tells the review queue under the lock: ordered with the others
                    raced = self._tell_queue(conn, source_id, name, plan, (held, at_stored), counts, None)
                failpoints.hit("store.before_commit")
            self.recorded.update(recorded)  # committed
            failpoints.hit("store.after_commit")
            if parked is not None:  # the apply's release, after its commit: a crash before it releases them again
                raced = self._tell_queue(None, source_id, name, plan, (held, at_stored), counts, parked)
            self._refresh_names()
            failpoints.hit("store.after_review")
            counts.update({"stored": len(plan.writable), "rejected": len(plan.rejected),
                           "parked": len(plan.parked) - len(raced)})
            for kind, count in plan.created.items():
                counts[f"{kind}s_new"] += count
            if not raced:
                result.counts.update(counts)
                result.problems += problems
                self.statistics.wrote(len(plan.writable))
                return
            again = {p.key for p in raced}
            todo = [i for i in todo if gate.item_key(source_id, i) in again]
        # decisions kept landing between our read and our park: nothing of the batch may be
        # acked as if it were settled, so the caller writes the whole batch again (idempotent)
        raise errors.WriteRaceError(f"{len(todo)} items raced with review decisions {RACE_ROUNDS} times")

    def _tell_queue(self, conn: Connection | None, source_id: int, name: str, plan: gate.Plan,
                    prices: tuple[list[tuple[HeldPrice, Release]], list[int]], counts: Counter[str],
                    parked: dict[str, Doc] | None) -> list[Parked]:
        """The review queue learns what the batch did: price changes held (and pending ones withdrawn:
        the shop shows the stored price again), items rejected, stored (no longer parked) and parked. Returns the items not parked because a decision landed
        meanwhile. ``conn``: the crawl's product-DB transaction (under the write lock), which the
        name suggestions read too (SQLite would not let a second connection in); ``parked``: the
        apply's release, a compare-and-set of the versions it read."""
        held, at_stored = prices
        counts["prices_held"] += self.queue.hold_prices(
            [_hold(h, gate.origin(source_id, name, by_offer)) for h, by_offer in held])
        if parked is None:  # a crawl's view; the apply's release carries an older one (a newer change may wait)
            counts["prices_withdrawn"] += self.queue.withdraw_prices(at_stored)
        self.queue.reject(plan.rejected, expected=parked)  # they are unparked with it
        self.queue.unpark([gate.item_key(source_id, i) for i in plan.writable], expected=parked)
        return self.queue.park(plan.parked, lambda kind, spelling: self._suggest(kind, spelling, conn),
                               expected=parked)

    def _still_parked(self, source_id: int, todo: list[Release], parked: dict[str, Doc],
                      counts: Counter[str]) -> list[Release]:
        still = self.queue.still_parked(parked)
        kept = [item for item in todo if gate.item_key(source_id, item) in still]
        counts["superseded"] += len(todo) - len(kept)
        return kept

    def reject(self, source_id: int, rejected: list[tuple[Release, str]], result: BatchResult) -> None:
        """Items rejected before they reached the writer (``worker.write_each``: ones it cannot read)."""
        self._reject(source_id, self._source_name(source_id), rejected, result)

    def _reject(self, source_id: int, name: str, rejected: list[tuple[Release, str]], result: BatchResult,
                parked: dict[str, Doc] | None = None) -> None:
        """Items that can never be written: recorded in the review queue with their reason (and so no
        longer parked: ``CrawlSide.reject``; ``parked``: as ``write``'s)."""
        if not rejected:
            return
        self.queue.reject([(gate.item_key(source_id, item), rejected_doc(item), gate.origin(source_id, name, item),
                            reason) for item, reason in rejected], parked)
        result.counts["invalid"] += len(rejected)
        result.rejections += [(item.url if item.line is None else f"line {item.line}", reason)
                              for item, reason in rejected]

    def _record_matches(self, conn: Connection, source_id: int,
                        plan: gate.Plan) -> set[tuple[int, str, str, int]]:
        """Each spelling the batch used is recorded with its entity (``source_spellings``), and the
        entities it created are counted in the source's metadata (``auto_approved``).

        Only the spellings this writer has not recorded lately are looked up: most batches of a
        crawl repeat known names."""
        seen = {(source_id, kind, spelling, entity_id) for kind, ids in plan.ids.items()
                for spelling, entity_id in ids.items()}
        sources.record_spellings(conn, source_id, {
            kind: {spelling: entity_id for spelling, entity_id in ids.items()
                   if (source_id, kind, spelling, entity_id) not in self.recorded}
            for kind, ids in plan.ids.items()})
        if any(plan.created.values()):
            meta: dict[str, Any] = dict(conn.execute(select(Source.meta).where(Source.id == source_id)).scalar_one() or {})
            auto = dict(meta.get("auto_approved") or {})
            for kind, count in plan.created.items():
                if count:
                    auto[f"{kind}s"] = auto.get(f"{kind}s", 0) + count
            conn.execute(update(Source).where(Source.id == source_id).values(meta={**meta, "auto_approved": auto}))
        return seen

    def _source_name(self, source_id: int) -> str:
        if source_id not in self._source_names:
            with self.engine.connect() as conn:
                self._source_names[source_id] = conn.execute(
                    select(Source.name).where(Source.id == source_id)).scalar_one()
        return self._source_names[source_id]

    def _suggest(self, kind: str, spelling: str, conn: Connection | None) -> list[dict[str, Any]]:
        """Merges to suggest for a new name, from this writer's index of the kind's names. The index
        is built at its first use (through ``conn``, a crawl's transaction under the write lock, when
        given) and rebuilt after a batch's commit, outside the lock, once it is older than
        ``NAME_INDEX_SECONDS``: building it reads every name of the kind (about a second at 100,000),
        which a batch must not hold the write lock for. Suggestions are advice: one can miss an entity
        created in the last minute."""
        if kind not in self.name_indexes:
            self._index_names(kind, conn)
        return self.name_indexes[kind][1].suggest(spelling)

    def _refresh_names(self) -> None:
        """The name indexes older than ``NAME_INDEX_SECONDS`` built again (after a commit: no lock held)."""
        for kind, (at, _) in list(self.name_indexes.items()):
            if time.monotonic() - at > NAME_INDEX_SECONDS:
                self._index_names(kind, None)

    def _index_names(self, kind: str, conn: Connection | None) -> None:
        """Index every name of ``kind``, read through ``conn`` or a connection of its own."""
        if conn is None:
            with self.engine.connect() as own:
                self._index_names(kind, own)
            return
        self.name_indexes[kind] = (time.monotonic(), NameIndex.build(entities.names(conn, kind), kind))


RACE_ROUNDS = 3  # a decision landing between the product-DB read and parking: resolve again
NAME_INDEX_SECONDS = 60.0  # a writer's index of names for suggestions is built again when older
PRODUCT_TABLES = sorted(name for name in Base.metadata.tables if name != "admin_users")  # what the writer writes


def _hold(held: HeldPrice, where: gate.Origin) -> PriceHold:
    def text(value: Any) -> str | None:
        return None if value is None else f"{value:.2f}"
    return PriceHold(held.offer_id, held.new.external_id, held.new.url, text(held.old.price),
                     text(held.new.price), held.old.currency, held.new.currency,
                     None if held.change_pct is None else round(held.change_pct, 2), where)


def _write(conn: Connection, source_id: int, plan: gate.Plan, resolution: timedelta,
           threshold_pct: float, counted: Counter[str],
           problems: list[tuple[str, str, str]]) -> tuple[list[tuple[HeldPrice, Release]], list[int]]:
    """The batch's writes; the price changes held (with their items), and the offers shown at the
    price now stored (a change of theirs still pending is stale)."""
    items = plan.writable
    if not items:
        return [], []
    artists, labels, styles = plan.ids["artist"], plan.ids["label"], plan.ids["style"]
    keys = _release_keys(conn, items, [tuple(dict.fromkeys(artists[a] for a in i.artists)) for i in items])
    wanted = {
        key: ReleaseRow(
            key, item.title, labels[item.label] if item.label else None, next(iter(item.numbers()), None),
            item.year, tuple(dict.fromkeys(artists[a] for a in item.artists)),
            frozenset(styles[s] for s in item.styles), item.release_barcode(), item.country, tuple(item.numbers()),
        )
        for key, item in zip(keys, items)
    }
    release_ids, new_releases, changed_releases = write_releases(conn, source_id, wanted)
    kept = _unique_offers([(offer, item, release_ids[key]) for key, item in zip(keys, items)
                           for offer in item.all_offers()], problems)
    counts = write_offers(conn, source_id, [_offer_row(offer, release_id) for offer, _, release_id in kept],
                          datetime.now(UTC), resolution, threshold_pct)
    counted.update({
        "releases_new": new_releases, "releases_changed": changed_releases,
        "offers_new": counts.new, "offers_changed": counts.changed,
        "offers_unchanged": counts.unchanged, "price_changes": counts.price_changes,
        "offers_duplicate": len(problems),
    })
    by_id = {offer.external_id: item for offer, item, _ in kept}
    return [(h, by_id[h.new.external_id]) for h in counts.held], counts.at_stored


Placed = tuple[Offer, Release, int]  # an offer, its item, its release's id


def _unique_offers(placed: list[Placed], problems: list[tuple[str, str, str]]) -> list[Placed]:
    """The first offer of each id in the batch (one row takes one offer); a later one with the same
    id, from another page, is not written: a problem, named with both pages."""
    first: dict[str, Placed] = {}
    for offer, item, release_id in placed:
        kept = first.setdefault(offer.external_id, (offer, item, release_id))
        if kept[0] is not offer:
            problems.append(("duplicate_offer", offer.url, (
                f"offer id {offer.external_id!r} is also on {kept[0].url} (in the same batch): only that one "
                "is stored; the shop repeats an id, or the profile's external_id is not the variant's own")))
    return list(first.values())


def _release_keys(conn: Connection, items: list[Release], artist_ids: list[tuple[int, ...]]) -> list[str]:
    """Each item's release: the one stored (or earlier in the batch) with its barcode, else with
    its label and any of its catalogue numbers and the same title or an artist in common, else
    with its artists + title + year, else a new one (``release_key``). Every step is tried for
    every item, so the order shops are crawled in does not change what matches."""
    barcodes = {item.release_barcode() for item in items} | {o.barcode for i in items for o in i.offers}
    known = by_barcode(conn, sorted(code for code in barcodes if code))
    wanted = [Wanted(item.label, tuple(item.numbers()), item.title, item.year, ids)
              for item, ids in zip(items, artist_ids)]
    numbered = by_catalog_numbers(conn, wanted)
    unmatched = [i for i, item in enumerate(items) if i not in numbered and not any(
        code in known for code in (item.release_barcode(), *(o.barcode for o in item.offers)) if code)]
    named = {unmatched[n]: key for n, key in by_names(conn, [wanted[i] for i in unmatched]).items()}
    taken = stored_keys(conn, [release_key(item) for item in items if item.label and item.numbers()])
    batch = _BatchKeys()
    keys = []
    for index, (item, want) in enumerate(zip(items, wanted)):
        codes = [code for code in (item.release_barcode(), *(o.barcode for o in item.offers)) if code]
        key = (next((known[code] for code in codes if code in known), None)
               or numbered.get(index) or batch.numbered(want) or named.get(index) or batch.named(want)
               or release_key(item, numbered=release_key(item) not in taken and not batch.taken(want)))
        known.update({code: key for code in codes if code not in known})  # later items of the batch
        batch.add(want, key)
        keys.append(key)
    return keys


class _BatchKeys:
    """Releases found earlier in the batch, by label + catalogue number and by names."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[str, str], list[tuple[str, str, tuple[int, ...]]]] = {}
        self.names: dict[tuple[str, int | None, tuple[int, ...]], str] = {}

    @staticmethod
    def _catnos(want: Wanted) -> list[tuple[str, str]]:
        return [(name_key(want.label), catalog_number_key(n)) for n in want.numbers] if want.label else []

    def numbered(self, want: Wanted) -> str | None:
        return next((key for c in self._catnos(want) for key, title_key, ids in self.numbers.get(c, [])
                     if want.same_record(title_key, ids)), None)

    def named(self, want: Wanted) -> str | None:
        return self.names.get((name_key(want.title), want.year, want.artist_ids))

    def taken(self, want: Wanted) -> bool:
        """Its label and first number belong to another record already: it cannot be named by them."""
        return bool(self._catnos(want)[:1] and self.numbers.get(self._catnos(want)[0]))

    def add(self, want: Wanted, key: str) -> None:
        for catno in self._catnos(want):
            self.numbers.setdefault(catno, []).append((key, name_key(want.title), want.artist_ids))
        self.names.setdefault((name_key(want.title), want.year, want.artist_ids), key)


def _offer_row(offer: Offer, release_id: int) -> OfferRow:
    return OfferRow(offer.external_id, offer.url, release_id, offer.price, offer.currency, offer.in_stock,
                    offer.availability, offer.format, offer.condition, offer.media_grade, offer.sleeve_grade,
                    offer.barcode)


def _problem(item: Release) -> str | None:
    """``validate.problem``, where a value of the wrong type (a float price, a UUID barcode: put there
    by a launcher's own pipeline, not by the normalizer) is this item's problem, not its batch's."""
    try:
        return validate.problem(item)
    except (TypeError, AttributeError, ValueError) as exc:  # what a value of another type raises; not a bug's KeyError
        return f"a value of the wrong type ({type(exc).__name__}: {str(exc)[:200]})"


def open_writer(engine: Engine, store: StoreConfig, review: ReviewConfig, trusted: bool) -> CatalogWriter:
    """The writer with the review queue the settings name: crawls, imports and the apply worker use it.
    The id sequences are put back at their tables' ``max(id)`` first (``db/ids.py``: a writer killed
    before its commit may have left one ahead); the CLI's and the admin's reads never wait for that."""
    with writing(engine) as conn:
        align_sequences(conn)
    return CatalogWriter(engine, timedelta(seconds=store.last_seen_resolution_seconds), open_queue(review),
                         ReviewPolicy(trusted, review.price_threshold_pct), store.analyze_rows)
