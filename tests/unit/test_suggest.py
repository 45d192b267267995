"""Suggested merges against an independent truth: the demo shop's second source says which
existing entity each variant spelling belongs to, and which names are new (no suggestion)."""

from __future__ import annotations

import pytest

from recordhound.demo.catalog import Catalog
from recordhound.demo.second import second_names
from recordhound.review.suggest import NameIndex


@pytest.mark.parametrize(("releases", "seed"), [(500, 1), (1000, 2), (300, 5)])
def test_top_suggestion_is_right_for_variants_and_new_names_get_none(releases: int, seed: int) -> None:
    catalog = Catalog(releases, seed=seed)
    indexes = {"artist": NameIndex.build(dict(enumerate(catalog.artist_names)), "artist"),
               "label": NameIndex.build(dict(enumerate(catalog.label_names)), "label")}
    right = variants = quiet = new = 0
    for name in second_names(catalog):
        found = indexes[name.kind].suggest(name.spelling)
        if name.into is None:
            new += 1
            quiet += not found
        else:
            variants += 1
            right += bool(found) and found[0]["name"] == name.into
    assert variants >= 80 and new >= 50
    assert right / variants >= 0.8, f"top-1 right for {right} of {variants} variants"
    assert quiet / new >= 0.8, f"{new - quiet} of {new} new names got a suggestion"


@pytest.mark.parametrize(("kind", "known", "spelling", "expected"), [
    ("label", ["Brufougal Records", "Warp Records"], "Sky Records", None),  # a shared suffix is no reason
    ("artist", ["DJ Pesadon", "DJ Pesaro", "DJ Koze"], "DJ Pesadaim", None),
    ("style", ["Electro", "House"], "Electronic", None),
    ("artist", ["J Dilla", "Aphex Twin"], "J. Dilla", "J Dilla"),
    ("artist", ["Jay Dilla", "Aphex Twin"], "J. Dilla", "Jay Dilla"),
    ("artist", ["Daft Punk", "Aphex Twin"], "Daft Pnuk", "Daft Punk"),
    ("artist", ["Björk", "Aphex Twin"], "Бьорк", "Björk"),
    ("artist", ["Simon and Garfunkel", "Aphex Twin"], "Simon & Garfunkel", "Simon and Garfunkel"),
    ("artist", ["Aphex Twin", "Daft Punk"], "Aphex Twin feat. Daft Punk", "Aphex Twin"),
    ("label", ["Warp Records", "Ninja Tune"], "Warp Recordings", "Warp Records"),
])
def test_what_tells_names_apart(kind: str, known: list[str], spelling: str, expected: str | None) -> None:
    found = NameIndex.build(dict(enumerate(known)), kind).suggest(spelling)
    assert (found[0]["name"] if found else None) == expected, found
