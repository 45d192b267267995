"""What record shops write about an offer, as recordhound's few values: format, condition,
Goldmine grade, availability and barcode.

Formats: ``LP``, ``2xLP`` (3xLP...), ``12"``, ``10"``, ``7"``, ``CD``, ``2xCD``, ``Cassette``,
``Box Set``, ``Digital`` (schema.org ``MusicReleaseFormatType`` values too); availability:
``in_stock``, ``sold_out``, ``pre_order`` (schema.org ``ItemAvailability`` and shop wording in a
few languages). ``None`` whenever the text says none of them: an unknown value is not guessed.
"""

from __future__ import annotations

import re

from recordhound.text import fold

AVAILABILITY = ("in_stock", "sold_out", "pre_order")
CONDITIONS = ("new", "used")
GRADES = ("M", "NM", "VG+", "VG", "G+", "G", "F", "P")

_SCHEMA_FORMATS = {
    "vinylformat": "LP", "cdformat": "CD", "cassetteformat": "Cassette", "digitalformat": "Digital",
    "dvdformat": "DVD", "laserdiscformat": "LaserDisc", "digitalaudiotapeformat": "DAT", "minidiscformat": "MiniDisc",
}
_SIZE = re.compile(r'(7|10|12)\s*(?:"|”|″|inch|in\b|zoll|\'\')')
_WORDS: tuple[tuple[str, str], ...] = (  # folded words → format, first match wins
    ("box", "Box Set"), ("cassette", "Cassette"), ("tape", "Cassette"), ("mc", "Cassette"),
    ("digital", "Digital"), ("download", "Digital"), ("mp3", "Digital"), ("flac", "Digital"),
    ("wav", "Digital"), ("compact disc", "CD"), ("cd", "CD"), ("lp", "LP"), ("vinyl", "LP"),
)
_AVAILABLE = {
    "in_stock": ("instock", "in stock", "available", "limitedavailability", "onlineonly", "instoreonly",
                 "auf lager", "lieferbar", "en stock", "disponible", "op voorraad", "true", "yes", "1"),
    "sold_out": ("outofstock", "out of stock", "sold out", "soldout", "discontinued", "unavailable",
                 "ausverkauft", "nicht lieferbar", "epuise", "agotado", "uitverkocht", "false", "no", "0"),
    "pre_order": ("preorder", "pre order", "presale", "backorder", "vorbestellung", "vorbestellbar",
                  "precommande", "coming soon"),
}
_GRADE_WORDS = (("near mint", "NM"), ("mint minus", "NM"), ("very good plus", "VG+"), ("very good", "VG"),
                ("good plus", "G+"), ("mint", "M"), ("good", "G"), ("fair", "F"), ("poor", "P"))
_GRADE_CODE = re.compile(r"\b(M-|NM|EX|VG\+\+|VG\+|VG|G\+|G|F|P|M)(?![\w+-])")


def _bare(value: str) -> str:
    if "schema.org/" in value:
        value = value.rstrip("/").rsplit("/", 1)[1]
    return value.strip()


def format_name(value: str | None) -> str | None:
    """'12" Vinyl' → ``12"``, "2LP"/"2 x LP"/"Double LP" → ``2xLP``, "Compact Disc" → ``CD``."""
    if not value:
        return None
    bare = _bare(value)
    schema = fold(bare).replace(" ", "")
    if schema in _SCHEMA_FORMATS:
        return _SCHEMA_FORMATS[schema]
    size = _SIZE.search(bare.lower())
    words = fold(bare.replace("×", "x"))
    name = next((n for word, n in _WORDS if re.search(rf"(?:\b|\d|x){re.escape(word)}\b", words)), None)
    if name == "LP" and size and (size.group(1) != "12" or not re.search(r"(?:\b|\d|x)lp\b", words)):
        return f'{size.group(1)}"'  # a 12" single or EP is not an LP
    if name is None:
        return f'{size.group(1)}"' if size else None
    count = _count(words)
    return f"{count}x{name}" if count > 1 and name in ("LP", "CD") else name


def _count(words: str) -> int:
    """How many discs: "2xlp", "2 x lp", "2lp", "double lp"."""
    found = re.match(r"^(\d+)\s*x\s*\w", words) or re.match(r"^(\d)\s*(?:lp|cd)\b", words)
    if found:
        return int(found.group(1))
    return {"double": 2, "triple": 3}.get(words.split(" ", 1)[0], 1)


def availability(value: str | None) -> str | None:
    """schema.org ItemAvailability or shop wording → ``in_stock`` / ``sold_out`` / ``pre_order``."""
    if value is None:
        return None
    text = fold(_bare(value))
    squashed = text.replace(" ", "")
    for state in ("pre_order", "sold_out", "in_stock"):
        if any(text == word or squashed == word.replace(" ", "") for word in _AVAILABLE[state]):
            return state
    for state in ("pre_order", "sold_out", "in_stock"):  # "Only 2 left in stock", "Sold Out!"
        if any(" " in word and word in text for word in _AVAILABLE[state]):
            return state
    return None


def condition(value: str | None) -> str | None:
    """schema.org NewCondition / UsedCondition, "new", "used", "second hand", "gebraucht"."""
    if not value:
        return None
    text = fold(_bare(value))
    if text in ("newcondition", "new", "neu", "sealed", "neuf", "nuevo"):
        return "new"
    if text in ("usedcondition", "used", "second hand", "secondhand", "gebraucht", "occasion", "usado",
                "refurbishedcondition", "damagedcondition", "preowned", "pre owned"):
        return "used"
    return None


def grade(value: str | None) -> str | None:
    """Goldmine grade: "Near Mint (NM or M-)" → ``NM``, "VG+" → ``VG+``, "EX" → ``VG+``."""
    if not value:
        return None
    text = value.strip()
    code = _GRADE_CODE.search(text.upper())
    if code:
        found = code.group(1)
        return {"M-": "NM", "EX": "VG+", "VG++": "VG+"}.get(found, found)
    folded = fold(text)
    return next((g for words, g in _GRADE_WORDS if words in folded), None)


def barcode(value: str | None) -> str | None:
    """A GTIN (8, 12, 13 or 14 digits, spaces and dashes dropped) with a valid check digit, in one
    form per code: a UPC-A ("724384960650") is its EAN-13 ("0724384960650"), and a GTIN-14 with a
    leading zero is the EAN-13 without it, so every shop's spelling names the same release."""
    if not value:
        return None
    digits = re.sub(r"[\s-]", "", value)
    if not digits.isdigit() or len(digits) not in (8, 12, 13, 14):
        return None
    body, check = digits[:-1], int(digits[-1])
    total = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(reversed(body)))
    if (10 - total % 10) % 10 != check:
        return None
    if len(digits) == 12:
        return "0" + digits
    return digits[1:] if len(digits) == 14 and digits[0] == "0" else digits
