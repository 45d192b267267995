"""Prices as shops print them ("€12,99", "$1,299.00", "1 299,00 ₽", "12.99 EUR") → Decimal + ISO 4217.

The text is read as a shop means it: digits of any script are digits ("１２．５０", "١٢٫٥٠"), and it must
hold one price. Beside the one amount that carries a currency ("2LP 24,99 €", '12" 9,99 €') bare counts
of up to three digits, dates and years not printed right beside another number are page text ("1-2 Tage",
"€24,99 - 180g", "€12.99 · LP · 2024"); two amounts with a currency, a range (a hyphen or "to" between two
amounts that both may be prices: "12.99 - 19.99"), was/now, a multi-buy ("2 for £10", "3 x 12,99 €") or
any other second amount is :class:`SeveralPrices`, never a pick. A sign ("-5.00") or an exponent ("1e5")
is a problem, not dropped. An amount with a percent sign ("inkl. 19% MwSt.", "Save 12.5%", "%20") is a rate,
never a price: a text with only a percentage holds no amount.

The currency is settled first (an explicit currency field, then the symbol printed beside the amount,
then the profile's default; an ISO code beside a symbol several currencies share decides: "$24.99 CAD",
"249 kr SEK", "USD $24.99", and so does the prefix of the symbol's name printed apart from it: "US $24.99",
"$24.99 US"; one that is not the symbol's is a problem; a symbol glued to a word is still the symbol:
"Sale price€19,99"), because the decimal separator is a property of how a shop writes *that*
currency. A printed symbol recordhound cannot name ("DM", "₿"; "kr" when the default is not SEK, NOK,
DKK or ISK; :mod:`recordhound.currencies`) is :class:`UnknownCurrency`, not the default. The separator
comes from the profile's rule for the currency, or is detected when the text says it unambiguously;
"1.234 €" with no rule is ambiguous and is never guessed. The amount must fit the separator's grouping
("£34.25" does not fit a "," decimal separator) and lie in the currency's plausible range: a price that
parses to a wrong number is an error, not a value. Only a structured number is rounded, to the cent
(``_structured``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from functools import lru_cache

from price_parser import Price

from recordhound.currencies import SYMBOLS as SYMBOLS  # re-exported: the table a profile extends
from recordhound.currencies import currency_code as currency_code
from recordhound.currencies import WORD_CODES, is_code, is_currency, named, printed_currencies, shared_by
from recordhound.exceptions import FieldError

def _range(low: str, high: str) -> tuple[Decimal, Decimal]:
    return Decimal(low), Decimal(high)


# What a record shop plausibly charges for one offer, per currency (a profile's `price.range`
# overrides it). Wide enough for box sets, narrow enough that a 100× misreading falls outside.
PLAUSIBLE_RANGES: dict[str, tuple[Decimal, Decimal]] = {
    **dict.fromkeys(("EUR", "USD", "GBP", "CHF", "CAD", "AUD", "NZD"), _range("0.50", "5000")),
    **dict.fromkeys(("SEK", "NOK", "DKK"), _range("5", "50000")),
    "PLN": _range("2", "20000"),
    "CZK": _range("10", "100000"),
    "RUB": _range("20", "500000"),
    "JPY": _range("50", "1000000"),
}
DECIMAL_SEPARATORS = (".", ",")
THOUSANDS_SEPARATORS = (".", ",", " ", "'")
_SPACES = re.compile("[\u00a0\u202f\u2009\u3000 ]")
_CENT = Decimal("0.01")
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


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str


@dataclass(frozen=True)
class PriceRule:
    """How one shop writes one currency; None: detect it (separators) or use the default (range)."""

    decimal_separator: str | None = None
    thousands_separator: str | None = None
    range: tuple[Decimal, Decimal] | None = None

    def over(self, base: PriceRule) -> PriceRule:
        """This rule, with what it leaves open taken from ``base``."""
        return PriceRule(self.decimal_separator or base.decimal_separator,
                         self.thousands_separator or base.thousands_separator, self.range or base.range)


class AmbiguousPrice(FieldError):
    """The text does not say which separator is the decimal one: a field problem, never a guess."""


class SeveralPrices(FieldError):
    """The text holds more than one price (a range, was/now, a multi-buy): which one is meant is not guessed."""


class UnknownCurrency(FieldError):
    """The text prints a currency recordhound cannot name (or one several currencies share)."""


class ImplausiblePrice(FieldError):
    """The text parses, but not to a price this shop can mean: the item is rejected.

    ``amount`` is what the text reads as under the rule, for reports of outliers."""

    def __init__(self, message: str, amount: Decimal | None, currency: str) -> None:
        super().__init__(message)
        self.amount, self.currency = amount, currency


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


def no_rules(currency: str) -> PriceRule:
    return PriceRule()


def parse_price(
    text: str | None,
    *,
    currency_text: str | None = None,
    default_currency: str | None = None,
    symbols: dict[str, str] | None = None,
    rule_for: Callable[[str], PriceRule] = no_rules,
    schema_number: bool = False,
) -> Money:
    """Parse one price; raises FieldError saying what could not be read.

    ``schema_number``: the text came from structured data, where a bare number uses "." for
    decimals (schema.org's rule) whatever the shop prints on the page."""
    if not text or not text.strip():
        raise FieldError("no price on the page")
    shown = text.strip()
    cached = len(shown) <= CACHED_TEXT_LENGTH and (currency_text is None or len(currency_text) <= CACHED_TEXT_LENGTH)
    reading = (_cached_reading if cached else _reading)(shown, currency_text)
    mapping = symbols or {}
    amount, printed = _the_amount(reading, shown, mapping, default_currency)
    code = currency_code(currency_text, mapping, default_currency) or _printed_currency(
        printed or ((reading.found,) if reading.found else ()), shown, mapping, default_currency) or default_currency
    if not code:
        raise FieldError(f"no currency in price text {shown!r} and no default_currency")
    rule = rule_for(code)
    low, high = rule.range or PLAUSIBLE_RANGES.get(code, (Decimal(0), Decimal("Infinity")))
    value = _value(amount.digits, rule, schema_number, shown, code, (low, high))
    if not low <= value <= high:
        raise ImplausiblePrice(
            f"price {value:.2f} {code} (from {shown!r}) is outside the plausible range "
            f"{low}–{high} {code}; set price.range (or price.currencies.{code}.range) if it is right",
            value, code)
    return Money(value.quantize(_CENT), code)


def _value(digits: str, rule: PriceRule, schema_number: bool, shown: str, code: str,
           plausible: tuple[Decimal, Decimal]) -> Decimal:
    if schema_number and re.fullmatch(r"\d+(\.\d+)?", digits):
        return _structured(digits, shown, code, plausible)
    separator = rule.decimal_separator or _detect(digits, shown, code)
    return _read(digits, separator, rule.thousands_separator, shown, code)


def _reading(shown: str, currency_text: str | None) -> _Reading:
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
_cached_reading = lru_cache(maxsize=4096)(_reading)
CACHED_TEXT_LENGTH = 64


def _plain(shown: str) -> str:
    """The text with digits of any script made ASCII ("１２．５０", "١٢٫٥٠") and spaces made plain."""
    if not shown.isascii():
        shown = "".join(
            unicodedata.normalize("NFKC", ch) if "\uff00" <= ch <= "\uffef"  # full-width forms
            else str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch
            for ch in shown)
    return _SPACES.sub(" ", shown.translate(_MARKS))


def _the_amount(reading: _Reading, shown: str, symbols: dict[str, str],
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


def _printed_currency(printed: tuple[str, ...], shown: str, symbols: dict[str, str],
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


def _structured(digits: str, shown: str, code: str, plausible: tuple[Decimal, Decimal]) -> Decimal:
    """A schema.org number ("." for decimals). Digits past the cent (a float's noise, a computed gross
    price) are rounded to the cent, unless "1.299" could as well be 1299, the three decimals are whole cents
    ("1.000", "25.000": written like a thousands group, not like noise), or the number is a half cent."""
    number = Decimal(digits)
    cents = number.quantize(_CENT, ROUND_HALF_EVEN)
    low, high = plausible
    if "." in digits and len(digits.rsplit(".", 1)[1]) == 3 and (
            cents == number or low <= Decimal(digits.replace(".", "")) <= high):
        return _read(digits, ".", None, shown, code)  # raises: "1.000", "25.000" may be thousands
    if cents == number:
        return number
    if abs(number - cents) == _CENT / 2:
        raise AmbiguousPrice(f"price {digits} {code} (from {shown!r}) is exactly half a cent: how the shop "
                             f"rounds it is not guessed")
    return cents


@lru_cache(maxsize=64)
def _grouped(marks: str) -> re.Pattern[str]:
    """Whole digits, plain or grouped by threes with one of ``marks`` throughout."""
    return re.compile(rf"\d+|\d{{1,3}}([{re.escape(marks)}])\d{{3}}(\1\d{{3}})*")


def _detect(digits: str, shown: str, code: str) -> str | None:
    """The decimal separator the text itself proves, None for a whole number."""
    marks = [ch for ch in digits if ch in DECIMAL_SEPARATORS]
    if not marks:
        return None
    if len(set(marks)) == 2:
        return marks[-1]  # "1.234,56" / "1,234.56": the last one separates the decimals
    if len(marks) > 1:
        return None  # "1.234.567": only thousands
    decimals = digits.rsplit(marks[0], 1)[1]
    if len(decimals) == 3:
        raise AmbiguousPrice(
            f"ambiguous price text {shown!r}: is {marks[0]!r} a decimal or a thousands separator? "
            f"set price.currencies.{code}.decimal_separator in the profile")
    return marks[0]


def _read(digits: str, separator: str | None, thousands: str | None, shown: str, code: str) -> Decimal:
    """The amount, if ``digits`` is well formed for the separator; ImplausiblePrice if not."""
    if separator and separator in digits:
        whole, decimals = digits.rsplit(separator, 1)
    else:
        whole, decimals = digits, ""
    marks = thousands or "".join(s for s in THOUSANDS_SEPARATORS if s != separator)
    well_formed = (_grouped(marks).fullmatch(whole) is not None
                   and re.fullmatch(r"\d{0,2}", decimals) is not None)
    amount = Decimal("".join(ch for ch in whole if ch.isdigit()) + "."
                     + ("".join(ch for ch in decimals if ch.isdigit()) or "0"))
    if not well_formed:
        raise ImplausiblePrice(
            f"price text {shown!r} does not fit the decimal separator {separator or '(none)'!r} for {code}: "
            f"it would read as {amount} {code}; check price.currencies.{code}.decimal_separator",
            amount, code)
    return amount
