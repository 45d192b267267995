"""Which amount of a price text is the price, and the currencies printed beside it; ``prices.parse_price``
reads its digits. See ``recordhound.prices`` for the rules (one price per text, the printed currency).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from price_parser import Price

from recordhound.currencies import WORD_CODES, is_code, is_currency, named, printed_currencies, shared_by
from recordhound.exceptions import FieldError


_SPACES = re.compile("[\u00a0\u202f\u2009\u3000 ]")


# Marks that are a separator or a minus sign whatever script the digits are in.
_MARKS = str.maketrans({"\u066b": ".", "\u066c": ",", "\u2019": "'", "\u2212": "-", "\u2012": "-", "\ufe63": "-",
                        "\u066a": "%"})


# One amount as printed: digits grouped by ".", ",", "'" or a space before three digits, maybe an exponent.
_AMOUNT = re.compile(r"\d+(?:(?:[.,']| (?=\d{3}(?!\d)))\d+)*(?P<exponent>[eE][+-]?\d+)?")


_PERCENT = re.compile(r" ?%")  # "19% MwSt.", "alv 25,5 %", "%20 indirim": a rate or a discount, never a price


_WORD_BEFORE = re.compile(r"([^\s\d/()\[\]{};:!?*+|]*)(\s*)$")  # "(€12" and "12 €/LP": the word is "€"


_WORD_AFTER = re.compile(r"\s*[(\[]?([^\s\d/()\[\]{};:!?*+|]*)")  # "12 $ (CAD)": the word is "CAD"


_PUNCTUATION = "()[]{}:;,!?/*+|\"'-–"


MAX_COUNT_DIGITS = 3  # '12" Vinyl', "2LP", "180g": a bare number beside the price is a count, not a price


WAS_WORDS = frozenset({"was", "statt", "instead", "before", "uvp", "rrp", "msrp", "vorher", "antes", "avant",
                       "previously", "ehemals", "prima"})


MULTI_BUY_WORDS = frozenset({"x", "×", "for", "für", "pour", "por", "voor", "för"})


RANGE_WORDS = frozenset({"-", "–", "—", "~", "to", "bis", "à", "a", "til", "till", "tot", "до"})


SHOWN_CHARS = 60  # of a price text in a problem


WORD_CHARS = 24  # looked at before an amount for its currency or sign (a long scraped text stays linear)


class SeveralPrices(FieldError):
    """The text holds more than one price (a range, was/now, a multi-buy): which one is meant is not guessed."""


class UnknownCurrency(FieldError):
    """The text prints a currency recordhound cannot name (or one several currencies share)."""


@dataclass(frozen=True)
class _Amount:
    """One amount in a price text, with the words printed right before and after it."""

    digits: str
    start: int
    end: int
    before: str
    after: str
    glued: bool  # nothing between ``before`` and the digits
    after_next: str  # the word after ``after``: "249 kr SEK", "24.99 $ CAD"
    before_previous: str = ""  # the word before ``before``: "USD $24.99", "US $24.99"


@dataclass(frozen=True)
class _Reading:
    text: str  # digits made ASCII, spaces plain
    amounts: tuple[_Amount, ...]
    found: str | None  # the currency price-parser finds in the text (or in the currency field)


def reading_of(shown: str, currency_text: str | None) -> _Reading:
    """The amounts in the text, and the currency price-parser finds in it (or in ``currency_text``)."""
    text = _plain(shown)
    amounts = []
    for match in _AMOUNT.finditer(text):
        if _PERCENT.match(text, match.end()) or text[max(0, match.start() - 1):match.start()] == "%":
            continue
        if match.group("exponent"):
            raise FieldError(f"price text {shown!r} is a number in exponent notation, not a price")
        before = _WORD_BEFORE.search(text, max(0, match.start() - WORD_CHARS), match.start())
        before_previous = (_WORD_BEFORE.search(text, max(0, before.start(1) - WORD_CHARS), before.start(1))
                           if before and before.group(1) else None)
        after = _WORD_AFTER.match(text, match.end())
        after_next = _WORD_AFTER.match(text, after.end()) if after else None
        amounts.append(_Amount(match.group(), match.start(), match.end(), before.group(1) if before else "",
                               after.group(1) if after else "", not (before and before.group(2)),
                               after_next.group(1) if after_next else "",
                               before_previous.group(1) if before_previous else ""))
    return _Reading(text, tuple(amounts), Price.fromstring(text, currency_hint=currency_text).currency)


# a shop prints the same few hundred prices on page after page; a long text or currency field
# (scraped, untrusted) is not kept
cached_reading = lru_cache(maxsize=4096)(reading_of)


CACHED_TEXT_LENGTH = 64


def _plain(shown: str) -> str:
    """The text with digits of any script made ASCII ("１２．５０", "١٢٫٥٠") and spaces made plain."""
    if not shown.isascii():
        shown = "".join(
            unicodedata.normalize("NFKC", ch) if "\uff00" <= ch <= "\uffef"  # full-width forms
            else str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch
            for ch in shown)
    return _SPACES.sub(" ", shown.translate(_MARKS))


def the_amount(reading: _Reading, shown: str, symbols: dict[str, str],
                default: str | None) -> tuple[_Amount, tuple[str, ...]]:
    """The one price in the text and the currencies printed beside it: its only amount, or the only one
    that is a price beside counts, years, dates and numbers of a unit ("2LP", "180g", "2-3 Tage")."""
    amounts = reading.amounts
    if not amounts:
        raise FieldError(f"no amount in price text {shown!r}")
    markers = _markers(reading, symbols, default)
    amount, why = (amounts[0], None) if len(amounts) == 1 else _several(reading, markers, symbols, default)
    if why or amount is None:
        raise SeveralPrices(
            f"price text {_short(shown)!r} holds several prices ({why}); none is taken: select the element "
            "that shows the one price to pay")
    rest = _clean(amount.before.replace("-", ""))  # "-5", "€-5", "-€5" are negative, "LP-12,99 €" is not
    if amount.glued and "-" in amount.before and (not rest or is_currency(rest, symbols, default)):
        raise FieldError(f"price text {shown!r} is negative: a price to pay is not")
    return amount, markers[amounts.index(amount)]


def _several(reading: _Reading, markers: list[tuple[str, ...]], symbols: dict[str, str],
             default: str | None) -> tuple[_Amount | None, str | None]:
    """The one price among the amounts, or why they are several prices."""
    amounts = reading.amounts
    if WAS_WORDS.intersection(re.findall(r"[^\W\d_]+", reading.text.lower())):
        return None, "was and now"
    marked = [a for a, marker in zip(amounts, markers) if marker]
    for (first, first_marker), (second, second_marker) in zip(zip(amounts, markers), zip(amounts[1:], markers[1:])):
        between = " ".join(w for w in "".join(
            " " if unicodedata.category(ch) == "Sc" else ch for ch in reading.text[first.end:second.start]).split()
            if not is_currency(w, symbols, default)).lower()
        # "3 x 12,99 €", "2 for £10", "£10 for 2": a count beside a price; "2x12\"" is a format
        if between in MULTI_BUY_WORDS and any(m or _has_cents(a) for a, m in ((first, first_marker),
                                                                               (second, second_marker))):
            return None, "a multi-buy"
        # "12.99 - 19.99", "12 - 19 €"; not "19,99 € - 1 Stk", "1-2 days", "€24,99 - 180g", "2016 - €24,99"
        if between in RANGE_WORDS and all(_may_be_price(a, m, symbols, default) for a, m in ((first, first_marker),
                                                                                              (second, second_marker))):
            return None, "a range"
    if len(marked) > 1:
        return None, f"{len(amounts)} amounts, {len(marked)} of them with a currency"
    candidates = marked or [a for a in amounts if _has_cents(a)]  # "19.99 (1)" with the default currency
    if len(candidates) != 1:
        return None, f"{len(amounts)} amounts, {len(marked)} of them with a currency"
    price = candidates[0]
    for index, amount in enumerate(amounts):
        if amount is not price and not _not_a_price(reading, index):
            return None, f"{len(amounts)} amounts"
    return price, None


def _has_cents(amount: _Amount) -> bool:
    return re.search(r"[.,]\d{1,2}$", amount.digits) is not None


def _may_be_price(amount: _Amount, marker: tuple[str, ...], symbols: dict[str, str], default: str | None) -> bool:
    """An amount on one side of a hyphen or "to" that could be one end of a range: one with a currency or
    cents, or a bare number that is not a year and not followed by a word ("1 Stk", "2 days", "180g")."""
    if marker or _has_cents(amount):
        return True
    if not amount.digits.isdigit() or _YEAR.fullmatch(amount.digits):
        return False
    word = _clean(amount.after).lower()
    return not word or word in RANGE_WORDS or word in MULTI_BUY_WORDS or is_currency(word, symbols, default)


_YEAR = re.compile(r"(?:19|20)\d\d")


_DATE = re.compile(r"\d{1,2}\.\d{1,2}\.(?:19|20)\d\d")  # "(Stand: 01.12.2026)"


def _not_a_price(reading: _Reading, index: int) -> bool:
    """An amount beside the price that is page text: a count of up to three digits ("2LP", '12"', "180g"),
    a date, or a year ("· 2024", "(2016)") not printed right beside another number ("Reissue 2024 24,99 €"
    could be one number misprinted, so it stays a problem)."""
    amount = reading.amounts[index]
    if _DATE.fullmatch(amount.digits):
        return True
    if not amount.digits.isdigit():
        return False
    if len(amount.digits) <= MAX_COUNT_DIGITS:
        return True
    if not _YEAR.fullmatch(amount.digits):
        return False
    neighbours = reading.amounts[max(0, index - 1):index] + reading.amounts[index + 1:index + 2]
    return not any(
        all(ch.isspace() or unicodedata.category(ch) == "Sc"
            for ch in reading.text[min(amount.end, other.end):max(amount.start, other.start)])
        for other in neighbours)


def _markers(reading: _Reading, symbols: dict[str, str], default: str | None) -> list[tuple[str, ...]]:
    """Per amount, the currency symbols and codes printed right before or after it ("$24.99 CAD" both).
    A symbol between two amounts is the first one's, unless that one has its own before it: "24,99 € 2LP",
    "€20 €15"."""
    markers: list[tuple[str, ...]] = []
    own_before = False
    for index, amount in enumerate(reading.amounts):
        before = _apart(_clean(amount.before_previous), printed_currencies(_clean(amount.before), symbols, default),
                        symbols, default, 1)
        after = printed_currencies(_clean(amount.after), symbols, default)
        if after:
            after = _apart(_clean(amount.after_next), after, symbols, default, 2)
            after += printed_currencies(_clean(amount.after_next), symbols, default)
        elif before:
            before = _apart(_clean(amount.after), before, symbols, default, 2)
        previous = reading.amounts[index - 1] if index else None
        shared = previous is not None and reading.text[previous.end:amount.start].strip() == amount.before
        own_before = bool(before) and (not shared or own_before)
        markers.append((before if own_before else ()) + after)
    return markers


def _apart(word: str, printed: tuple[str, ...], symbols: dict[str, str], default: str | None,
           shortest: int) -> tuple[str, ...]:
    """A lone symbol with an upper-case word printed apart from it (a space, the amount between): the word
    is the prefix of the symbol's name ("US $24.99", "C $24.99", "$24.99 US"; ``shortest`` letters at least)
    or, before the symbol, an ISO code beside it ("USD $24.99", "SEK kr 249"), which decides as a code after
    the amount does; any other word is page text."""
    if (len(printed) != 1 or not shortest <= len(word) <= 3 or not (word.isalpha() and word.isupper())
            or not (shared_by(printed[0]) or any(unicodedata.category(ch) == "Sc" for ch in printed[0]))):
        return printed
    if named(word + printed[0], symbols, default):
        return (word + printed[0],)
    return printed + (word,) if shortest == 1 and is_code(word) else printed


def _clean(word: str) -> str:
    return word.strip(_PUNCTUATION)


def printed_currency(printed: tuple[str, ...], shown: str, symbols: dict[str, str],
                      default: str | None) -> str | None:
    """The code of the currency printed beside the amount; UnknownCurrency when one is printed that
    recordhound cannot name, or two that disagree. An ISO code decides among the currencies of a symbol
    they share: "$24.99 CAD", "249 kr SEK"; "€24.99 USD" is a problem."""
    codes = [word for word in printed if is_code(word)]
    signs = [word for word in printed if not is_code(word)]
    if signs:
        codes = [code for code in codes if code not in WORD_CODES]  # "€19.99 ALL INCLUSIVE": page text
    if codes:
        code = codes[0].upper()
        disagree = [word for word in codes + signs
                    if word.upper() != code and named(word, symbols, default) != code and code not in shared_by(word)]
        if disagree:
            raise UnknownCurrency(
                f"price text {shown!r} prints {codes[0]!r} and {disagree[0]!r}, which name different currencies: "
                f"map them in price.currency_symbols or select the element with the one price")
        return code
    found = [_one_currency(word, shown, symbols, default) for word in signs]
    if len(set(found)) > 1:
        raise UnknownCurrency(f"price text {shown!r} prints {signs[0]!r} and {signs[found.index(found[-1])]!r}, "
                              f"which name different currencies")
    return found[0] if found else None


def _one_currency(printed: str, shown: str, symbols: dict[str, str], default: str | None) -> str:
    code = named(printed, symbols, default)
    if code:
        return code
    shared = shared_by(printed)
    if shared:
        raise UnknownCurrency(
            f"price text {shown!r}: {printed!r} is the symbol of {', '.join(shared)}; set price.default_currency "
            f"to one of them or map it in price.currency_symbols")
    raise UnknownCurrency(f"price text {shown!r} shows the currency {printed!r}, which recordhound does not know; "
                          f"map it to an ISO code in price.currency_symbols")


def _short(text: str) -> str:
    plain = _SPACES.sub(" ", text)
    return plain if len(plain) <= SHOWN_CHARS else plain[:SHOWN_CHARS - 1] + "…"
