"""How often the suggested merge is right, on the demo shop's second source.

    python bench/suggestions.py [--releases 500] [--seed 1]

The second source (``recordhound/demo/second.py``) holds variants of the first source's artist
and label names (typos, suffixes, prefixes, initials, "feat.", Cyrillic, case) with the entity
each should merge into, and new names that should get no suggestion. For every name the scorer
suggests against the first source's entities; the figures are the share of variants whose top
suggestion is the right entity, and the share of new names with no suggestion at all. The
baseline is the scorer it replaced (rapidfuzz WRatio over folded names, cut-off 60).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rapidfuzz import fuzz, process, utils  # noqa: E402

from bench.common import table  # noqa: E402
from recordhound.demo.catalog import Catalog  # noqa: E402
from recordhound.demo.second import second_names  # noqa: E402
from recordhound.review.suggest import NameIndex  # noqa: E402
from recordhound.text import name_key  # noqa: E402


def measure(catalog: Catalog, suggest_for: dict[str, object]) -> dict[str, object]:
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    quiet = new = 0
    misses = []
    for name in second_names(catalog):
        found = suggest_for[name.kind](name.spelling)  # type: ignore[operator]
        if name.into is None:
            new += 1
            quiet += not found
            continue
        total[name.how] += 1
        if found and found[0] == name.into:
            right[name.how] += 1
        else:
            misses.append((name.spelling, name.into, found[:1]))
    variants = sum(total.values())
    return {"top1": sum(right.values()) / variants, "quiet": quiet / new, "by_how": {h: (right[h], total[h]) for h in total},
            "misses": misses, "variants": variants, "new": new}


def _ours(catalog: Catalog) -> dict[str, object]:
    indexes = {kind: NameIndex.build(dict(enumerate(pool)), kind)
               for kind, pool in (("artist", catalog.artist_names), ("label", catalog.label_names))}
    return {kind: (lambda spelling, i=index: [s["name"] for s in i.suggest(spelling)]) for kind, index in indexes.items()}


def _baseline(catalog: Catalog) -> dict[str, object]:
    def make(pool: list[str]) -> object:
        keys = {i: name_key(n) for i, n in enumerate(pool)}
        return lambda spelling: [pool[i] for _, _, i in process.extract(
            name_key(spelling), keys, scorer=fuzz.WRatio, processor=utils.default_process, limit=5, score_cutoff=60)]
    return {"artist": make(catalog.artist_names), "label": make(catalog.label_names)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--releases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--misses", action="store_true", help="list the variants whose top suggestion is wrong")
    args = parser.parse_args()
    catalog = Catalog(args.releases, seed=args.seed)
    ours, base = measure(catalog, _ours(catalog)), measure(catalog, _baseline(catalog))
    print(f"second source: {ours['variants']} variants, {ours['new']} new names; "
          f"{len(catalog.artist_names)} artists, {len(catalog.label_names)} labels known")
    rows = [("scorer", "top-1 right (variants)", "no suggestion (new names)")]
    for label, result in (("baseline WRatio", base), ("rarity-weighted", ours)):
        rows.append((label, f"{result['top1']:.1%}", f"{result['quiet']:.1%}"))
    print(table(rows))
    print("rarity-weighted, by kind of variant: " + ", ".join(
        f"{how} {r}/{t}" for how, (r, t) in ours["by_how"].items()))  # type: ignore[attr-defined]
    if args.misses:
        for miss in ours["misses"]:  # type: ignore[attr-defined]
            print("  miss:", miss)


if __name__ == "__main__":
    main()
