"""Deterministic name pools for the demo catalog, with the spelling variants real shops print."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

# Entities whose spellings vary from page to page, as they do across real shops.
VARIANT_ARTISTS: tuple[tuple[str, ...], ...] = (
    ("The Beatles", "Beatles, The", "the beatles"),
    ("The Orb", "Orb, The"),
    ("Björk", "Bjork", "BJÖRK"),
)
STYLES: tuple[tuple[str, ...], ...] = (
    ("Hip Hop", "Hip-Hop", "hip hop"),
    ("Drum & Bass", "Drum and Bass"),
    ("House",), ("Techno",), ("Jazz",), ("Dub",), ("Ambient",), ("Soul",),
    ("Funk",), ("Disco",), ("Post-Punk", "Post Punk"), ("Krautrock",),
    ("Reggae",), ("Electro",), ("Trip Hop", "Trip-Hop"), ("Folk",),
)
NON_UTF8_ARTIST = "Sigur Rós"
NON_UTF8_TITLE = "Café Ágætis Byrjun"

_ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "k", "l", "m", "n", "p", "r", "s", "st", "t", "tr", "v", "z")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ee")
_CODAS = ("", "n", "r", "s", "x", "th", "l", "m")
_WORDS = (
    "Night", "Echo", "Velvet", "Static", "Golden", "Silent", "Neon", "Paper", "Wild",
    "Broken", "Electric", "Hollow", "Crystal", "Distant", "Burning", "Lunar", "Urban",
    "Secret", "Frozen", "Infinite", "Rhythm", "Shadow", "River", "Garden", "Signal",
)
_NOUNS = (
    "Sessions", "Dreams", "Tapes", "Stories", "Waves", "Lines", "Rooms", "Lights",
    "Machines", "Voices", "Songs", "Roads", "Mirrors", "Hours", "Fields", "Circles",
)


def _word(rng: random.Random) -> str:
    syllables = rng.randint(1, 3)
    raw = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return (raw + rng.choice(_CODAS)).capitalize()


def unique_names(
    rng: random.Random, count: int, make: Callable[[random.Random], str], reserved: Iterable[str] = ()
) -> list[str]:
    """``count`` names whose folded forms all differ from each other and from ``reserved``."""
    seen = {"".join(ch for ch in name.lower() if ch.isalnum()) for name in reserved}
    names: list[str] = []
    while len(names) < count:
        name = make(rng)
        folded = "".join(ch for ch in name.lower() if ch.isalnum())
        if folded not in seen:
            seen.add(folded)
            names.append(name)
    return names


def artist_name(rng: random.Random) -> str:
    return f"{_word(rng)} {_word(rng)}" if rng.random() < 0.6 else f"DJ {_word(rng)}"


def label_name(rng: random.Random) -> str:
    return f"{_word(rng)} {rng.choice(('Records', 'Recordings', 'Music', 'Sounds', 'Label'))}"


def release_title(rng: random.Random) -> str:
    return f"{rng.choice(_WORDS)} {rng.choice(_NOUNS)}" + (f" Vol. {rng.randint(1, 9)}" if rng.random() < 0.2 else "")
