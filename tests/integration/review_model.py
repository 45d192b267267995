"""The model of tests/integration/test_review_stateful.py: from a reviewer's decisions alone (never from the
code under test), where each crawled item and each unknown name should be, which jobs are in which state,
and what the offers' prices and their history are. The machine drives the real queue and worker and
tells the model what it did; its invariants compare the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from recordhound.text import name_key


KINDS = ("artist", "label", "style")
SEEDED = {"artist": ("Known A", "Known B"), "label": ("Known Label",), "style": ("House",)}
NEW = {"artist": ("New One", "NEW ONE", "New Two"), "label": ("Fresh Label",), "style": ("Dub Techno", "dub techno")}
ITEMS = ("e0", "e1", "e2", "e3")  # items of names (their price never moves)
OFFERS = ("p0", "p1")  # items of a seeded artist whose price moves
PRICES = ("100.00", "102.00", "150.00", "200.00")  # 100 ↔ 102: under the 5 % threshold; the rest above it
MISSING = 999_999  # a merge into an entity deleted since the decision: its job fails
UNDECIDED = ("pending", "queued", "failed", "expired")
FIELDS = st.tuples(
    st.lists(st.sampled_from(SEEDED["artist"] + NEW["artist"]), min_size=1, max_size=2, unique_by=name_key),
    st.sampled_from((None,) + SEEDED["label"] + NEW["label"]),
    st.lists(st.sampled_from(SEEDED["style"] + NEW["style"]), max_size=1))


@dataclass(frozen=True)
class Version:
    title: str
    artists: tuple[str, ...]
    label: str | None
    styles: tuple[str, ...]

    def names(self, kind: str) -> tuple[str, ...]:
        return {"artist": self.artists, "label": (self.label,) if self.label else (), "style": self.styles}[kind]


@dataclass
class Name:
    """An unknown name (one entry per kind and key) as the reviewer's decisions leave it."""

    kind: str
    key: str
    state: str = "pending"  # UNDECIDED, or approved / merged / edited / skipped once its job is applied
    target: str | None = None  # the key of the entity it names once decided (not skipped)
    spellings: set[str] = field(default_factory=set)  # each is a synonym of the entity once decided
    entry_id: int | None = None
    decided_by: int | None = None  # the job whose apply settled it


@dataclass
class PriceEntry:
    sku: str
    old: str
    new: str
    revision: int = 1
    status: str = "pending"  # queued, approved, superseded (withdrawn, or stale when applied), rejected
    id: int | None = None  # learnt when a reviewer views it
    decided_by: int | None = None


@dataclass
class Job:
    id: int
    action: str
    name: Name | None = None
    price: PriceEntry | None = None
    outcome: tuple[str, str | None] = ("", None)  # a name's (state, target key) once applied
    new_name: str | None = None  # an edit's name: its entity is the one the name stands for when applied
    state: str = "approved"  # processing, completed, failed
    holder: str | None = None



class ReviewModel:
    """The expected state; ``seeded`` (kind, key) → id is set by the machine once it has seeded the product DB."""

    def __init__(self) -> None:
        super().__init__()
        self.seeded: dict[tuple[str, str], int] = {}
        self.synonyms: dict[tuple[str, str], str] = {}  # (kind, spelling) → the key of its entity

        self.names: dict[tuple[str, str], Name] = {}
        self.versions: dict[str, list[Version]] = {}
        self.where: dict[str, tuple[str, dict[str, Any] | None]] = {}  # sku → its latest version's place (fields)
        self.waits: dict[str, set[tuple[str, str]]] = {}  # sku → the names (kind, key) it is parked on
        self.price: dict[str, str] = {}
        self.history: dict[str, list[tuple[str, str]]] = {}
        self.price_entries: dict[str, list[PriceEntry]] = {}
        self.viewed: list[tuple[int, int]] = []  # (entry id, revision) a reviewer saw
        self.jobs: dict[int, Job] = {}

    def seed(self, seeded: dict[tuple[str, str, str], int]) -> None:
        """(kind, key, spelling) → id: the entities the product DB starts with."""
        self.seeded = {(kind, key): i for (kind, key, _), i in seeded.items()}
        self.synonyms = {(kind, spelling): key for kind, key, spelling in seeded}

    def entity_keys(self, kind: str) -> set[str]:
        """The keys of the entities the product DB holds: seeded, and made by the decisions applied."""
        return {key for (k, key) in self.seeded if k == kind} | {
            m.target for m in self.names.values() if m.kind == kind and m.target and m.decided_by}

    def resolve(self, kind: str, spelling: str) -> tuple[str, str | None]:
        """("known", entity key) | ("skipped", None) | ("undecided", None): an entity's synonym first, then an
        entity by key (the gate's rule: a known entity is used straight away); else the name's decision."""
        key = name_key(spelling)
        if (kind, spelling) in self.synonyms:
            return "known", self.synonyms[(kind, spelling)]
        if key in self.entity_keys(kind):
            return "known", key
        name = self.names.get((kind, key))
        if name is None or name.state in UNDECIDED:
            return "undecided", None
        return ("skipped", None) if name.state == "skipped" else ("known", name.target)

    def place(self, v: Version) -> tuple[str, dict[str, Any] | None]:
        """Where a version goes through the gate now: stored (with its fields' entity keys), parked, rejected."""
        found = {kind: [self.resolve(kind, n) for n in v.names(kind)] for kind in KINDS}
        if all(state == "skipped" for state, _ in found["artist"]):
            return "rejected", None
        if any(state == "undecided" for kind in KINDS for state, _ in found[kind]):
            return "parked", None
        keys = {kind: [key for state, key in found[kind] if state == "known"] for kind in KINDS}
        return "stored", {"title": v.title, "artists": list(dict.fromkeys(keys["artist"])),
                          "label": (keys["label"] or [None])[0], "styles": sorted(set(keys["style"]))}

    def gated(self, sku: str) -> None:
        """The item's latest version went through the gate (a crawl, or the release of a name it waited on): it is
        stored, rejected, or parked on its undecided names (entries created, spellings added); the spellings
        of decided names become synonyms of their entities."""
        v = self.versions[sku][-1]
        where, fields = self.place(v)
        self.where[sku], self.waits[sku] = (where, fields), set()
        for kind in KINDS:
            for spelling in v.names(kind):
                state, _ = self.resolve(kind, spelling)
                key = (kind, name_key(spelling))
                if state == "undecided" and where == "parked":
                    self.names.setdefault(key, Name(kind, key[1])).spellings.add(spelling)
                    self.waits[sku].add(key)
                elif state == "known":
                    self.synonyms.setdefault((kind, spelling), self.resolve(kind, spelling)[1])  # type: ignore
                    if key in self.names:
                        self.names[key].spellings.add(spelling)

    def released(self, name: Name) -> None:
        """The items parked on ``name`` go through the gate again."""
        for sku in [sku for sku, keys in self.waits.items() if (name.kind, name.key) in keys]:
            self.gated(sku)

    def lease(self, worker: str, limit: int) -> list[Job]:
        """Every lease of a staller has run out: they come back first; the oldest jobs are leased."""
        for job in self.jobs.values():
            if job.state == "processing":
                job.state, job.holder = "approved", None
        taken = sorted((j for j in self.jobs.values() if j.state == "approved"), key=lambda j: j.id)[:limit]
        for job in taken:
            job.state, job.holder = "processing", worker
        return taken

    def applied(self, job: Job, worker: str, dies: bool = False) -> None:
        """``worker`` applies ``job`` (its holder, or a stalled one whose lease another took over); ``dies``: it
        is killed once the job's writes are committed and its entry settled (its items not released, no ack)."""
        held = job.state == "processing" and job.holder == worker
        if job.name is not None and job.action == "merge" and job.outcome[1] is None:  # into a missing entity
            if held and not dies:
                job.state, job.holder, job.name.state = "failed", None, "failed"
            return
        if job.name is not None and job.name.decided_by is None:
            self.settle_name(job)
        if job.price is not None and job.price.decided_by is None:
            self.settle_price(job)
        if dies:
            return
        if job.name is not None:
            self.released(job.name)
        if held:
            job.state, job.holder = "completed", None

    def settle_name(self, job: Job) -> None:
        """An edit's entity is the one its name stands for now (created when none); the name's spellings
        become synonyms of its entity, those no entity has yet (an edit may name another entry's name)."""
        name = job.name
        assert name is not None
        state, target = job.outcome
        if job.new_name is not None:
            target = self.entity_for(name.kind, job.new_name)
        name.state, name.target, name.decided_by = state, target, job.id
        for spelling in sorted(name.spellings) if target else ():
            self.synonyms.setdefault((name.kind, spelling), target)

    def entity_for(self, kind: str, spelling: str) -> str:
        """The key of the entity a name stands for (by synonym, then key); a new entity when none."""
        found = self.synonyms.get((kind, spelling))
        if found is None and name_key(spelling) not in self.entity_keys(kind):
            self.synonyms[(kind, spelling)] = name_key(spelling)  # created: its name is its first synonym
        return found or name_key(spelling)

    def decided(self, name: Name, job_id: int, action: str, outcome: tuple[str, str | None],
                new_name: str | None = None) -> None:
        """A decision on ``name`` is queued as job ``job_id``; its failed job (if any) is superseded."""
        for failed in (j for j in self.jobs.values() if j.name is name and j.state == "failed"):
            failed.state = "completed"
        name.state = "queued"
        self.jobs[job_id] = Job(job_id, action, name=name, outcome=outcome, new_name=new_name)

    def settle_price(self, job: Job) -> None:
        entry = job.price
        assert entry is not None
        entry.decided_by = job.id
        if job.action == "skip":
            entry.status = "rejected"
        elif self.price[entry.sku] == entry.old:
            self.history[entry.sku].append((entry.old, entry.new))
            self.price[entry.sku], entry.status = entry.new, "approved"
        else:
            entry.status = "superseded"

    def crawled_price(self, sku: str, price: str) -> None:
        if sku not in self.price:
            self.price[sku], self.history[sku] = price, []
            return
        stored, entries = self.price[sku], self.price_entries.setdefault(sku, [])
        latest = entries[-1] if entries else None
        if abs(Decimal(price) - Decimal(stored)) / Decimal(stored) * 100 <= 5:
            if price != stored:
                self.history[sku].append((stored, price))
                self.price[sku] = price
            if latest is not None and latest.status in ("pending", "expired"):
                latest.status = "superseded"  # withdrawn: the shop shows the stored price (never to be asked again)
                for job in self.jobs.values():
                    if job.price is latest and job.state == "failed":
                        job.state = "completed"  # an expired one's job is done with: nothing left to retry
            return
        if latest and latest.status in ("queued", "rejected") and (latest.old, latest.new) == (stored, price):
            return  # the same change waits for its apply, or was rejected: not asked again
        if latest is None or latest.status != "pending":
            entries.append(PriceEntry(sku, stored, price))
        elif (latest.old, latest.new) != (stored, price):
            latest.old, latest.new, latest.revision = stored, price, latest.revision + 1
