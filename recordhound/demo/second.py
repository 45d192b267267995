"""The demo shop's second source: releases whose names are variants of the first source's
(typos, label suffixes, artist prefixes, initials, "feat.", Cyrillic transliterations, case and
accents), and genuinely new names. Its truth says which existing entity each variant should be
merged into, and which names should get no suggestion at all (``second_source`` of
``/_truth.json``); ``/feeds/second.csv`` is the source itself, importable as ``demo_second``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from recordhound.demo import names
from recordhound.demo.catalog import Catalog

VARIANTS_PER_KIND = {"artist": 60, "label": 30}
NEW_PER_KIND = {"artist": 40, "label": 20}
_CYRILLIC = dict(zip("abvgdezik", "абвгдезик")) | dict(zip("lmnoprstuf", "лмнопрстуф"))
_CYRILLIC.update({"h": "х", "c": "к", "y": "й", "j": "дж", "x": "кс", "w": "в", "q": "к"})  # as a shop would write it


@dataclass(frozen=True)
class SecondName:
    kind: str
    spelling: str
    into: str | None  # the first source's entity it is a variant of; None: a new name
    how: str


def second_names(catalog: Catalog) -> list[SecondName]:
    rng = random.Random(f"recordhound-second:{catalog.seed}")
    found: list[SecondName] = []
    artists = [n for n in catalog.artist_names[len(names.VARIANT_ARTISTS) + 1:]]
    for kind, pool in (("artist", artists), ("label", catalog.label_names)):
        chosen = rng.sample(pool, min(VARIANTS_PER_KIND[kind], len(pool)))
        for index, name in enumerate(chosen):
            how, spelling = _variant(rng, kind, name, index, pool)
            if spelling != name:
                found.append(SecondName(kind, spelling, name, how))
    taken = {_bare(n) for n in [*catalog.artist_names, *catalog.label_names]}
    new_rng = random.Random(f"recordhound-second-new:{catalog.seed}")
    for kind, make in (("artist", names.artist_name), ("label", names.label_name)):
        for spelling in names.unique_names(new_rng, NEW_PER_KIND[kind], make, reserved=taken):
            found.append(SecondName(kind, spelling, None, "new"))
    return found


def _variant(rng: random.Random, kind: str, name: str, index: int, pool: list[str]) -> tuple[str, str]:
    words = name.split()
    ways = ["typo", "case", "cyrillic"] + (["suffix"] if kind == "label" else ["initial", "feat", "prefix"])
    how = ways[index % len(ways)]
    if how == "typo":
        return how, _typo(rng, name)
    if how == "case":
        return how, name.upper() if index % 2 else name.lower()
    if how == "cyrillic":
        return how, "".join(_CYRILLIC.get(ch.lower(), ch) for ch in name)
    if how == "suffix":
        other = rng.choice([s for s in ("Records", "Recordings", "Music", "Sounds", "Label", "Rec.") if s != words[-1]])
        return how, " ".join(words[:-1]) + ("" if index % 3 == 0 else f" {other}")
    if how == "initial" and len(words) > 1 and words[0] != "DJ":
        return how, f"{words[0][0]}. {' '.join(words[1:])}"
    if how == "prefix":
        return how, " ".join(words[1:]) if words[0] == "DJ" else f"DJ {name}"
    if how == "feat" or how == "initial":
        guest = rng.choice([p for p in pool if p != name])
        return "feat", f"{name} feat. {guest}"
    return how, name


def _typo(rng: random.Random, name: str) -> str:
    word_index = max(range(len(name.split())), key=lambda i: len(name.split()[i]))
    words = name.split()
    word = words[word_index]
    position = rng.randrange(1, len(word) - 1) if len(word) > 3 else 1
    change = rng.choice(("swap", "drop", "double"))
    if change == "swap" and position < len(word) - 1:
        word = word[:position] + word[position + 1] + word[position] + word[position + 2:]
    elif change == "drop":
        word = word[:position] + word[position + 1:]
    else:
        word = word[:position] + word[position] + word[position:]
    words[word_index] = word
    return " ".join(words)


def _bare(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def second_truth(catalog: Catalog) -> dict[str, object]:
    listed = second_names(catalog)
    return {
        "variants": [{"kind": n.kind, "spelling": n.spelling, "into": n.into, "how": n.how} for n in listed if n.into],
        "new": [{"kind": n.kind, "spelling": n.spelling} for n in listed if n.into is None],
    }


def second_csv(catalog: Catalog) -> bytes:
    """One release per name of the second source (the feed's columns), so an import parks each."""
    import csv
    import io

    from recordhound.demo.feeds import COLUMNS

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    label = catalog.label_names[0]
    artist = catalog.artist_names[len(names.VARIANT_ARTISTS) + 1]
    for index, name in enumerate(second_names(catalog)):
        writer.writerow((f"S2-{index:05d}", f"Second Source Release {index}", name.spelling if name.kind == "artist" else artist,
                         name.spelling if name.kind == "label" else label, f"SEC-{index:05d}", "2020", "House",
                         "€10,00", "yes"))
    return out.getvalue().encode("utf-8")
