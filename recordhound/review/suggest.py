"""Suggested merges for a pending name: the existing entities it is most likely a spelling of.

Names are compared by their *core*: transliterated to Latin (anyascii: "Бьорк" → "Bjork"),
folded, with what does not tell names apart removed: a label's suffix ("Records", "Recordings",
"Music"), an artist's prefix ("DJ", "MC", "The"), and everything from "feat." on. Cores that are
equal score 100. Otherwise the tokens of the two cores are paired (equal, a typo away, or an
initial: "J." and "Jay") and weighted by their rarity in the catalog, so a word that many names
share ("Records", "DJ", "Band") counts for little and a rare one for much. Only candidates at or
above :data:`THRESHOLD` are suggested; ``bench/suggestions.py`` calibrates it on the demo shop's
second source (variants of known names, and new names that should get no suggestion).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from anyascii import anyascii
from rapidfuzz import fuzz, process
from rapidfuzz.distance import DamerauLevenshtein

from recordhound.text import fold

SUGGESTIONS = 5
THRESHOLD = 75.0  # score 0–100 at or above which a candidate is suggested (bench/suggestions.py)
TYPO_RATIO = 75.0  # two tokens at least this alike (rapidfuzz ratio) are a typo of each other
PREFILTER = 30  # candidates rescored per name, from a fast whole-string pass and shared tokens

LABEL_SUFFIXES = frozenset({"records", "recordings", "record", "rec", "recs", "music", "sounds", "sound",
                            "label", "ltd", "inc", "productions", "company", "co", "gmbh", "llc"})
ARTIST_PREFIXES = frozenset({"dj", "mc", "the", "dr"})
_FEAT = re.compile(r"\s(?:feat|ft|featuring|vs|with)\b.*$")
# Cyrillic romanized by anyascii, back to how the Latin original is usually spelled
_ROMANIZED = (("dzh", "j"), ("kh", "h"), ("ks", "x"), ("shch", "sh"))


def latin(name: str) -> str:
    """The name in folded Latin letters (other scripts transliterated)."""
    text = anyascii(name)
    if text != name and not name.isascii():
        text = text.replace("'", "")
        for romanized, original in _ROMANIZED:
            text = text.replace(romanized, original).replace(romanized.capitalize(), original.capitalize())
    return fold(text)


def _is_suffix(word: str) -> bool:
    return word in LABEL_SUFFIXES or (len(word) > 4 and process.extractOne(
        word, LABEL_SUFFIXES, scorer=fuzz.ratio, score_cutoff=TYPO_RATIO) is not None)  # "recordigns"


def core(name: str, kind: str) -> str:
    """What identifies the name: Latin letters, folded, without suffixes, prefixes and guests."""
    text = latin(name)
    text = _FEAT.sub("", f" {text}").strip() or text
    words = text.split()
    if kind == "label":
        while len(words) > 1 and _is_suffix(words[-1]):
            words.pop()
    if kind == "artist":
        while len(words) > 1 and words[0] in ARTIST_PREFIXES:
            words.pop(0)
    if words and words[0] == "the" and len(words) > 1:
        words.pop(0)
    return " ".join(words)


@dataclass
class NameIndex:
    """One kind's entities, prepared once for many suggestions (the writer keeps it per batch)."""

    kind: str
    names: dict[int, str]
    cores: dict[int, str] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    by_token: dict[str, list[int]] = field(default_factory=dict)
    default_weight: float = 1.0  # an unseen token: as rare as can be

    @classmethod
    def build(cls, names: dict[int, str], kind: str) -> NameIndex:
        index = cls(kind, names, {entity_id: core(name, kind) for entity_id, name in names.items()})
        frequency: Counter[str] = Counter()
        for entity_id, name in names.items():
            tokens = set(latin(name).split())  # suffixes and prefixes too: they are common
            frequency.update(tokens)
            for token in set(index.cores[entity_id].split()):
                index.by_token.setdefault(token, []).append(entity_id)
        total = max(1, len(names))
        index.weights = {token: math.log((total + 1) / (count + 0.5)) for token, count in frequency.items()}
        index.default_weight = math.log((total + 1) / 0.5)
        return index

    def weight(self, token: str) -> float:
        return self.weights.get(token, self.default_weight)

    def suggest(self, spelling: str, limit: int = SUGGESTIONS) -> list[dict[str, Any]]:
        """Up to ``limit`` entities (id, name, score 0–100) at or above the threshold, best first."""
        wanted = core(spelling, self.kind)
        if not wanted or not self.names:
            return []
        found = process.extract(wanted, self.cores, scorer=fuzz.ratio, limit=PREFILTER, score_cutoff=50)
        candidates = {entity_id for _, _, entity_id in found}
        for token in wanted.split():
            if self.weight(token) > 1.0:  # a shared rare token; common ones would list half the catalog
                candidates.update(self.by_token.get(token, ())[:PREFILTER])
        scored = [(self.score(wanted, self.cores[e]), e) for e in candidates]
        scored = sorted((s for s in scored if s[0] >= THRESHOLD), key=lambda s: (-s[0], self.names[s[1]]))
        return [{"id": int(e), "name": self.names[e], "score": round(score, 1)} for score, e in scored[:limit]]

    def score(self, wanted: str, candidate: str) -> float:
        if wanted == candidate:
            return 100.0
        mine, theirs = wanted.split(), candidate.split()
        if not mine or not theirs:
            return 0.0
        matched = 0.0
        free = list(theirs)
        for token in mine:
            best, best_at = 0.0, -1
            for at, other in enumerate(free):
                alike = _alike(token, other)
                if alike > best:
                    best, best_at = alike, at
            if best_at >= 0:
                matched += best * (self.weight(token) + self.weight(free[best_at])) / 2
                free.pop(best_at)
        total = (sum(self.weight(t) for t in mine) + sum(self.weight(t) for t in theirs)) / 2
        return 100.0 * min(1.0, matched / total) if total else 0.0


def _alike(token: str, other: str) -> float:
    """1 for equal tokens, less for a typo or an initial, 0 for unrelated ones."""
    if token == other:
        return 1.0
    if (len(token) == 1 or len(other) == 1) and token[0] == other[0]:
        return 0.9  # "j" for "jay"
    edits = DamerauLevenshtein.distance(token, other, score_cutoff=2)  # a swap is one edit
    longest = max(len(token), len(other))
    if edits == 1:  # one slip weighs more in a short word: "pnuk" is less surely "punk" than "recrods"
        return 0.9 if longest >= 6 else 0.8 if longest == 5 else 0.7 if longest == 4 else 0.0
    return 0.75 if edits == 2 and longest >= 8 else 0.0


def suggest(names: dict[int, str], spelling: str, kind: str, limit: int = SUGGESTIONS,
            index: NameIndex | None = None) -> list[dict[str, Any]]:
    """Up to ``limit`` entities whose names look like ``spelling`` (see :class:`NameIndex`)."""
    return (index or NameIndex.build(names, kind)).suggest(spelling, limit)
