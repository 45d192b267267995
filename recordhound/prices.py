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
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from functools import lru_cache

from recordhound.currencies import SYMBOLS as SYMBOLS  # re-exported: the table a profile extends
from recordhound.currencies import currency_code as currency_code
from recordhound.exceptions import FieldError
from recordhound.price_text import CACHED_TEXT_LENGTH as CACHED_TEXT_LENGTH  # re-exported
from recordhound.price_text import SeveralPrices as SeveralPrices  # re-exported: a problem parse_price raises
from recordhound.price_text import UnknownCurrency as UnknownCurrency  # re-exported, as SeveralPrices
from recordhound.price_text import cached_reading, printed_currency, reading_of, the_amount

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
_CENT = Decimal("0.01")


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


class ImplausiblePrice(FieldError):
    """The text parses, but not to a price this shop can mean: the item is rejected.

    ``amount`` is what the text reads as under the rule, for reports of outliers."""

    def __init__(self, message: str, amount: Decimal | None, currency: str) -> None:
        super().__init__(message)
        self.amount, self.currency = amount, currency


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
    reading = (cached_reading if cached else reading_of)(shown, currency_text)
    mapping = symbols or {}
    amount, printed = the_amount(reading, shown, mapping, default_currency)
    code = currency_code(currency_text, mapping, default_currency) or printed_currency(
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
