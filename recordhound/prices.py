"""Prices as shops print them ("€12,99", "$1,299.00", "1 299,00 ₽", "12.99 EUR") → Decimal + ISO 4217.

The currency is settled first (an explicit currency field, then the symbol in the text, then the
profile's default), because the decimal separator is a property of how a shop writes *that*
currency. The separator comes from the profile's rule for the currency, or is detected when the
text says it unambiguously; "1.234 €" with no rule is ambiguous and is never guessed. The amount
must fit the separator's grouping ("£34.25" does not fit a "," decimal separator) and lie in the
currency's plausible range: a price that parses to a wrong number is an error, not a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from price_parser import Price

from recordhound.exceptions import FieldError

# Currency symbols and words → ISO 4217. A profile's `currency_symbols` extends/overrides this.
SYMBOLS: dict[str, str] = {
    "€": "EUR", "eur": "EUR", "euro": "EUR",
    "$": "USD", "us$": "USD", "usd": "USD",
    "£": "GBP", "gbp": "GBP",
    "₽": "RUB", "руб": "RUB", "руб.": "RUB", "р.": "RUB", "rub": "RUB",
    "¥": "JPY", "jpy": "JPY", "円": "JPY",
    "kr": "SEK", "zł": "PLN", "chf": "CHF", "c$": "CAD", "a$": "AUD",
}


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
_SPACES = re.compile("[\u00a0\u202f\u2009 ]")
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


def currency_code(found: str | None, symbols: dict[str, str]) -> str | None:
    """Map what the page printed to an ISO code; a bare 3-letter code passes as is."""
    if not found:
        return None
    token = found.strip()
    code = symbols.get(token) or symbols.get(token.lower()) or SYMBOLS.get(token.lower())
    if code:
        return code
    if len(token) == 3 and token.isalpha():
        return token.upper()
    return None


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
    digits, found = (_cached_reading if cached else _reading)(shown, currency_text)
    if not digits or not any(ch.isdigit() for ch in digits):
        raise FieldError(f"no amount in price text {shown!r}")
    mapping = symbols or {}
    code = currency_code(currency_text, mapping) or currency_code(found, mapping) or default_currency
    if not code:
        raise FieldError(f"no currency in price text {shown!r} and no default_currency")
    rule = rule_for(code)
    if schema_number and re.fullmatch(r"\d+(\.\d+)?", digits):
        separator: str | None = "."
    else:
        separator = rule.decimal_separator or _detect(digits, shown, code)
    amount = _read(digits, separator, rule.thousands_separator, shown, code)
    low, high = rule.range or PLAUSIBLE_RANGES.get(code, (Decimal(0), Decimal("Infinity")))
    if not low <= amount <= high:
        raise ImplausiblePrice(
            f"price {amount:.2f} {code} (from {shown!r}) is outside the plausible range "
            f"{low}–{high} {code}; set price.range (or price.currencies.{code}.range) if it is right",
            amount, code)
    return Money(amount.quantize(_CENT), code)


def _reading(shown: str, currency_text: str | None) -> tuple[str, str | None]:
    """price-parser's reading of the text: (the amount as printed, spaces made plain; the currency it found)."""
    parsed = Price.fromstring(shown, currency_hint=currency_text)
    return _SPACES.sub(" ", parsed.amount_text or "").strip(), parsed.currency


# a shop prints the same few hundred prices on page after page; a long text or currency field
# (scraped, untrusted) is not kept
_cached_reading = lru_cache(maxsize=4096)(_reading)
CACHED_TEXT_LENGTH = 64


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
    amount = Decimal("".join(ch for ch in whole if ch.isdigit()) + "." + ("".join(ch for ch in decimals if ch.isdigit()) or "0"))
    if not well_formed:
        raise ImplausiblePrice(
            f"price text {shown!r} does not fit the decimal separator {separator or '(none)'!r} for {code}: "
            f"it would read as {amount} {code}; check price.currencies.{code}.decimal_separator",
            amount, code)
    return amount
