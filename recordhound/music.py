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
_SIZE = re.compile(r'(?:(?<![\w.,])(\d)\s*[x×]\s*)?(7|10|12)\s*(?:"|”|″|inch|in\b|zoll|\'\')')  # 2x12"
_PHYSICAL: tuple[tuple[str, str], ...] = (  # folded words → format, the first in this list wins
    ("box", "Box Set"), ("boxset", "Box Set"), ("cassette", "Cassette"), ("tape", "Cassette"), ("mc", "Cassette"),
    ("compact disc", "CD"), ("cd", "CD"), ("lp", "LP"), ("vinyl", "LP"),
)
_DIGITAL = (("digital", "Digital"), ("download", "Digital"), ("mp3", "Digital"), ("flac", "Digital"),
            ("wav", "Digital"))  # only when no physical format is named: "LP + Download Code" is an LP
_TIMES = re.compile(r"(?<![\w.,])(\d{1,2})\s*x\s*(?=\w)")  # "2xlp", "3 x cd"
_DISCS = re.compile(r"(?<![\w.,])(\d)\s*(?:lp|cd)s?\b")  # "2lp", "deluxe edition 2cd"
_MULTIPLE = re.compile(r"^(double|triple)\b|\b(double|triple)\s*(?:lp|cd|vinyl)\b")
_AVAILABLE = {
    "in_stock": ("instock", "in stock", "available", "limitedavailability", "onlineonly", "instoreonly",
                 "auf lager", "lieferbar", "verfugbar", "vorratig", "en stock", "disponible", "disponibile",
                 "op voorraad", "in voorraad", "leverbaar", "true", "yes", "1"),
    "sold_out": ("outofstock", "out of stock", "sold out", "soldout", "discontinued", "unavailable",
                 "ausverkauft", "nicht lieferbar", "epuise", "agotado", "uitverkocht", "esaurito", "false", "no", "0"),
    "pre_order": ("preorder", "pre order", "presale", "backorder", "vorbestellung", "vorbestellbar",
                  "precommande", "coming soon"),
}
_STOCK = ("in stock|available|auf lager|lieferbar|verfugbar|vorratig|en stock|disponible|disponibile|"
          "op voorraad|in voorraad|leverbaar|stock|lager|voorraad")
_SOON = "soon|bald|bientot|binnenkort|pronto|presto"
_NOT_NOW = tuple(re.compile(pattern) for pattern in (  # stock wording that says "not now", per language
    r"\b(?:not|no|never)\s+(?:\w+\s+)?(?:in stock|available|stock)\b",  # "not in stock", "no longer available"
    r"\b(?:nicht|kein|keine)\s+(?:\w+\s+)?(?:auf lager|lieferbar|verfugbar|vorratig)\b",  # "nicht mehr auf Lager"
    r"\b(?:pas|plus)\s+(?:\w+\s+)?(?:en stock|disponible)\b",  # "pas en stock", "n'est plus disponible"
    r"\b(?:no|sin)\s+(?:\w+\s+)?(?:disponible|stock)\b",  # "no disponible", "sin stock"
    r"\b(?:niet|geen)\s+(?:\w+\s+)?(?:op voorraad|in voorraad|leverbaar|voorraad)\b",  # "niet op voorraad"
    r"\bnon\s+(?:\w+\s+)?(?:disponibile|disponible)\b",  # "non disponibile"
    r"\b(?:in stock|available)\s+(?:again\s+)?soon\b",  # "in stock soon", "back in stock again soon", "available soon"
    r"\bsoon\s+(?:back\s+)?(?:in stock|available)\b",  # "soon in stock", "soon back in stock"
    r"\bbald\s+(?:wieder\s+)?(?:auf lager|lieferbar|verfugbar|vorratig)\b",  # "bald (wieder) auf Lager"
    r"\bbientot\s+(?:de nouveau\s+)?(?:en stock|disponible)\b",  # "bientot en stock"
    r"\bbinnenkort\s+(?:weer\s+)?(?:op voorraad|in voorraad|leverbaar)\b",  # "binnenkort op voorraad"
    r"\b(?:pronto|presto)\s+(?:de nuevo\s+|di nuovo\s+)?(?:disponible|disponibile|en stock)\b",
))  # (the words side by side: "In stock - ships soon" is in stock)
_GRADE_WORDS = (("near mint", "NM"), ("mint minus", "NM"), ("very good plus", "VG+"), ("very good", "VG"),
                ("good plus", "G+"), ("mint", "M"), ("good", "G"), ("fair", "F"), ("poor", "P"))
_GRADE_CODE = re.compile(r"\b(M-|NM|EX|VG\+\+|VG\+|VG|G\+|G|F|P|M)(?![\w+-])")


def _bare(value: str) -> str:
    if "schema.org/" in value:
        value = value.rstrip("/").rsplit("/", 1)[1]
    return value.strip()


def format_name(value: str | None) -> str | None:
    """'12" Vinyl' → ``12"``, "2LP"/"2 x LP"/"Double LP" → ``2xLP``, "Compact Disc" → ``CD``, '2x12"' →
    ``2x12"``; a physical format named anywhere wins over a download: "Vinyl LP + Download Code" → ``LP``."""
    if not value:
        return None
    bare = _bare(value)
    schema = fold(bare).replace(" ", "")
    if schema in _SCHEMA_FORMATS:
        return _SCHEMA_FORMATS[schema]
    size = _SIZE.search(bare.lower())
    words = fold(bare.replace("×", "x"))
    name = _named(words, _PHYSICAL)
    if size and (name is None or name == "LP" and (size.group(2) != "12" or not _named(words, (("lp", "LP"),)))):
        times = int(size.group(1) or 1)  # a 12" single or EP is not an LP
        return f'{times}x{size.group(2)}"' if times > 1 else f'{size.group(2)}"'
    if name is None:
        return _named(words, _DIGITAL)
    count = _count(words)
    return f"{count}x{name}" if count > 1 and name in ("LP", "CD") else name


def _named(words: str, names: tuple[tuple[str, str], ...]) -> str | None:
    return next((n for word, n in names if re.search(rf"(?:\b|\d|x){re.escape(word)}s?\b", words)), None)


def _count(words: str) -> int:
    """How many discs, wherever the text says it: "2xlp", "2 x lp", "2lp", "deluxe edition 2cd", "double lp"."""
    found = _TIMES.search(words) or _DISCS.search(words)
    if found:
        return int(found.group(1))
    multiple = _MULTIPLE.search(words)
    return {"double": 2, "triple": 3}[multiple.group(1) or multiple.group(2)] if multiple else 1


def availability(value: str | None) -> str | None:
    """schema.org ItemAvailability or shop wording → ``in_stock`` / ``sold_out`` / ``pre_order``."""
    if value is None:
        return None
    text = fold(_bare(value))
    squashed = text.replace(" ", "")
    for state in ("pre_order", "sold_out", "in_stock"):
        if any(text == word or squashed == word.replace(" ", "") for word in _AVAILABLE[state]):
            return state
    if any(" " in word and word in text for word in _AVAILABLE["pre_order"]):
        return "pre_order"
    # the status said first: "Currently not in stock" is sold out, "In stock - not available abroad" in stock
    said = [(found.start(), 0, "sold_out") for pattern in _NOT_NOW if (found := pattern.search(text))]
    said += [(text.find(word), rank, state) for rank, state in enumerate(("sold_out", "in_stock"))
             for word in _AVAILABLE[state] if " " in word and word in text]  # "Only 2 left in stock", "Sold Out!"
    return min(said)[2] if said else None  # (at one place, "not now" wins: "in stock soon")


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
    """A GTIN (8, 12, 13 or 14 digits, spaces and dashes dropped) with a valid check digit, not a
    ``placeholder``, in one form per code: a UPC-A ("724384960650") is its EAN-13 ("0724384960650"), and a
    GTIN-14 with a leading zero is the EAN-13 without it, so every shop's spelling names the same release."""
    if not value:
        return None
    digits = re.sub(r"[\s-]", "", value)
    if not digits.isdigit() or len(digits) not in (8, 12, 13, 14):
        return None
    body, check = digits[:-1], int(digits[-1])
    total = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(reversed(body)))
    if (10 - total % 10) % 10 != check:
        return None
    code = "0" + digits if len(digits) == 12 else digits[1:] if len(digits) == 14 and digits[0] == "0" else digits
    return None if placeholder(code) else code


def placeholder(code: str) -> bool:
    """A shop's filler, not a code GS1 gives a record: every digit before the check digit the same, leading
    zeros aside ("0000000000000", "1111111111116", UPC "555555555555"). Several pass the check digit, and the
    writer matches releases by barcode first: unrelated records would become one."""
    return len(set(code[:-1].lstrip("0"))) <= 1
