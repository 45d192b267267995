"""The demo's review backlog: 1,000 names a reviewer has to clear, with the right decision for each.

Most are spelling variants of the demo catalog's artists and labels (typos, Cyrillic
transliterations, label suffixes, artist prefixes and initials, as ``second.py`` makes them),
the rest new names. A variant's folded key differs from every catalog name's (a case variant
would match on its own and never reach the queue) and from every other backlog name's. The
truth says which catalog name each variant merges into (``into``) and which names are new
(``into`` is None): after the backlog is cleared, the catalog holds the demo's names plus the
new ones, and every variant is a synonym of its ``into``. ``tests/integration/test_review_bulk_browser.py``
and ``bench/review_bulk.py`` park it (one release per name; every fifth name waits on two) and clear it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from recordhound.demo import names
from recordhound.demo.catalog import Catalog
from recordhound.demo.second import _variant
from recordhound.text import name_key

BACKLOG_NAMES = 1000
NEW_SHARE = 0.2  # of the backlog: names no catalog entity is behind
RELEASES_FOR_BACKLOG = 1500  # a demo catalog this size has enough names to vary (500 artists, 100 labels)
SECOND_RELEASE_EVERY = 5  # every fifth backlog name waits on two releases (so "sort by waiting" sorts)


@dataclass(frozen=True)
class BacklogName:
    kind: str  # artist or label
    spelling: str
    into: str | None  # the catalog name it is a variant of; None: a new name (approve it)
    how: str
    releases: int  # how many releases wait on it


def known_names(catalog: Catalog) -> dict[str, list[str]]:
    """The catalog names a backlog is made against (what a first, trusted crawl created)."""
    return {"artist": list(catalog.artist_names), "label": list(catalog.label_names)}


def backlog_names(catalog: Catalog, count: int = BACKLOG_NAMES) -> list[BacklogName]:
    rng = random.Random(f"recordhound-backlog:{catalog.seed}")
    known = known_names(catalog)
    taken = {name_key(n) for pool in known.values() for n in pool}
    pairs: list[tuple[str, str, str, str]] = []  # kind, spelling, into, how
    variants = count - int(count * NEW_SHARE)
    pools = [(kind, name) for kind, pool in known.items()
             for name in pool[len(names.VARIANT_ARTISTS) + 1 if kind == "artist" else 0:]]
    for round_ in range(6):
        for index, (kind, name) in enumerate(rng.sample(pools, len(pools))):
            if len(pairs) == variants:
                break
            how, spelling = _variant(rng, kind, name, index + round_, known[kind])
            if how in ("feat", "case") or name_key(spelling) in taken or not spelling.strip():
                continue  # a crawl splits "feat." names; a case variant matches by itself
            taken.add(name_key(spelling))
            pairs.append((kind, spelling, name, how))
    if len(pairs) < variants:
        raise ValueError(f"a demo catalog of {catalog.releases} releases has too few names for {variants} "
                         f"variants: use {RELEASES_FOR_BACKLOG} releases or more")
    new_rng = random.Random(f"recordhound-backlog-new:{catalog.seed}")
    for kind, make, share in (("artist", names.artist_name, 0.75), ("label", names.label_name, 0.25)):
        for spelling in names.unique_names(new_rng, round((count - variants) * share), make, reserved=sorted(taken)):
            taken.add(name_key(spelling))
            pairs.append((kind, spelling, "", "new"))
    order = rng.sample(range(len(pairs)), len(pairs))  # variants and new names mixed, as a crawl parks them
    return [BacklogName(kind, spelling, into or None, how, 2 if i % SECOND_RELEASE_EVERY == 0 else 1)
            for i, (kind, spelling, into, how) in enumerate(pairs[j] for j in order)]


def backlog_truth(catalog: Catalog, count: int = BACKLOG_NAMES) -> dict[str, object]:
    """What a correct reviewer makes of the backlog: names per type, and each variant's entity."""
    listed = backlog_names(catalog, count)
    known = known_names(catalog)
    return {
        "entities": {kind: sorted([*known[kind], *(n.spelling for n in listed if n.kind == kind and not n.into)])
                     for kind in known},
        "synonyms": {kind: {n.spelling: n.into for n in listed if n.kind == kind and n.into} for kind in known},
    }
