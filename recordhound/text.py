"""Text normalization: clean display strings and the matching keys derived from them."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_SPACES = re.compile(r"\s+")
_NOT_WORD = re.compile(r"[^\w]+")
_TRAILING_ARTICLE = re.compile(r"^(?P<rest>.+?),\s*(?P<article>the|a|an|les|la|le|die|der|das)$")
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d|2100)\b")

DEFAULT_NAME_SEPARATORS = (" / ", "; ", " feat. ", " ft. ", " featuring ", " vs. ")


def clean(value: str | None) -> str | None:
    """NFC, no invisible characters, single spaces, stripped; ``None`` for nothing left."""
    if value is None:
        return None
    # ASCII is NFC already and has no invisible characters (a third of the cost, on every value
    # a selector finds); str.split() splits at what ``\s`` matches (both: str.isspace)
    text = value if value.isascii() else unicodedata.normalize("NFC", value).translate(_INVISIBLE)
    return " ".join(text.split()) or None


def fold(value: str) -> str:
    """Lower case without diacritics, punctuation or repeated spaces."""
    if value.isascii():  # NFKD leaves ASCII as it is and finds no combining marks in it
        bare = value.lower().replace("&", " and ")
    else:
        decomposed = unicodedata.normalize("NFKD", value.casefold())
        bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
        bare = bare.replace("&", " and ").replace("ß", "ss").replace("ø", "o").replace("đ", "d")
    return _SPACES.sub(" ", _NOT_WORD.sub(" ", bare).replace("_", " ")).strip()


# The writer asks for the keys of the same artists, labels, styles and catalogue numbers batch after
# batch (each item's names, then the stored rows it is matched with): pure functions, so cached. The
# names a batch repeats are recent or common: over the 100,000-release demo shop 8,192 keys of each kind
# answer 92 % (names) and 90 % (catalogue numbers) of the writer's calls, 65,536 answered 98 % and 90 %
# and held ~30 MB more, filled over the whole crawl.
KEYS_CACHED = 1 << 13  # keys of each kind kept (least recently used dropped; ~2 MB each)


@lru_cache(maxsize=KEYS_CACHED)
def name_key(value: str) -> str:
    """The matching key of an artist, label or style name.

    "The Beatles", "Beatles, The" and "the  beatles" share one key, and so do
    "Hip-Hop" and "Hip Hop". A name of punctuation only ("!!!", "???") is its own key, compatibility
    forms and spaces aside ("…" = "...", "! ! !" = "!!!"): folding would leave them all one empty key.
    """
    text = clean(value) or ""
    moved = _TRAILING_ARTICLE.match(text.casefold())
    if moved:
        text = f"{moved['article']} {moved['rest']}"
    return fold(text) or "".join(unicodedata.normalize("NFKC", text).casefold().split())


@lru_cache(maxsize=KEYS_CACHED)
def catalog_number_key(value: str) -> str:
    """Catalogue numbers compare without case, spaces or punctuation: "WARP-CD 92" = "warpcd92"."""
    return "".join(ch for ch in fold(value) if ch.isalnum())


_CATNO_SEPARATORS = re.compile(r"\s+/{1,2}\s+|\s*;\s*|,\s+|\s+\|\s+")


def split_catalog_numbers(value: str | None) -> list[str]:
    """"FLD001 / CAT-2" → ["FLD001", "CAT-2"] (also ``;``, ``, ``, `` | ``), repeats dropped by
    their matching key; a number's own "/" without spaces ("SUB 12/3") stays."""
    numbers: dict[str, str] = {}
    for part in _CATNO_SEPARATORS.split(value or ""):
        part = part.strip()
        if part and (key := catalog_number_key(part)) and key not in numbers:
            numbers[key] = part
    return list(numbers.values())


def split_names(values: Iterable[str], separators: Iterable[str] = DEFAULT_NAME_SEPARATORS) -> list[str]:
    """Split "A / B" style strings into names, keeping order and dropping repeats."""
    names: list[str] = []
    seps = tuple(separators)
    for value in values:
        parts = [value]
        for sep in seps:
            parts = [piece for part in parts for piece in _split_ci(part, sep)]
        for part in parts:
            name = clean(part)
            if name and name not in names:
                names.append(name)
    return names


def _split_ci(text: str, sep: str) -> list[str]:
    return re.split(re.escape(sep), text, flags=re.IGNORECASE) if sep else [text]


def parse_year(value: str | None) -> int | None:
    """The first plausible four-digit year in the text."""
    if not value:
        return None
    found = _YEAR.search(value)
    return int(found.group(1)) if found else None


_TRUE = {"true", "yes", "1", "in stock", "available", "instock", "in_stock",
         "limitedavailability", "onlineonly", "instoreonly"}  # the last three: schema.org ItemAvailability
_FALSE = {"false", "no", "0", "out of stock", "sold out", "unavailable", "outofstock", "out_of_stock",
          "soldout", "discontinued", "preorder", "presale", "backorder"}


def parse_bool(value: str | None) -> bool | None:
    """Stock flags as shops write them; ``None`` when the text says neither."""
    if value is None:
        return None
    if "schema.org/" in value:  # "https://schema.org/InStock"
        value = value.rstrip("/").rsplit("/", 1)[1]
    text = fold(value)
    if text in _TRUE or value.strip().lower() in _TRUE:
        return True
    if text in _FALSE or value.strip().lower() in _FALSE:
        return False
    return None


def preferred_spelling(spellings: Iterable[str]) -> str:
    """Of several spellings of one name, the one to display: "The Beatles" over "Beatles, The"."""
    def score(spelling: str) -> tuple[int, int, str]:
        natural_order = 0 if _TRAILING_ARTICLE.match(spelling.casefold()) else 2
        cased = 1 if spelling != spelling.lower() and spelling != spelling.upper() else 0
        accents = sum(1 for ch in spelling if ord(ch) > 127)  # "Björk" keeps what "Bjork" lost
        return natural_order + cased, accents, spelling
    return max(spellings, key=score)


def text_or(value: object, fallback: str) -> str:
    """``str(value)``, or ``fallback`` when a value's ``__str__`` raises (an item's values may come from
    a launcher's own pipeline: what names such an item must not fail)."""
    try:
        text = str(value)
        return text if type(text) is str else str.__str__(text)  # a str subclass's __str__ may return itself
    except Exception:  # noqa: BLE001 - whatever a value's __str__ raises
        return fallback


def now_iso() -> str:
    """The timestamps of a source's metadata (``parsed_at``, ``started_at``, errors' ``at``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")
