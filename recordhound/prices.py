"""Prices as shops print them ("€12,99", "$1,299.00", "1 299,00 ₽", "12.99 EUR") → Decimal + ISO 4217."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

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
_CENT = Decimal("0.01")


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str


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


def parse_price(
    text: str | None,
    *,
    currency_text: str | None = None,
    default_currency: str | None = None,
    decimal_separator: str | None = None,
    symbols: dict[str, str] | None = None,
) -> Money:
    """Parse one price; raises FieldError saying what could not be read."""
    if not text or not text.strip():
        raise FieldError("no price on the page")
    parsed = Price.fromstring(text, currency_hint=currency_text, decimal_separator=decimal_separator)
    if parsed.amount is None:
        raise FieldError(f"no amount in price text {text.strip()!r}")
    if parsed.amount < 0:
        raise FieldError(f"negative amount in price text {text.strip()!r}")
    mapping = symbols or {}
    code = currency_code(currency_text, mapping) or currency_code(parsed.currency, mapping)
    code = code or default_currency
    if not code:
        raise FieldError(f"no currency in price text {text.strip()!r} and no default_currency")
    return Money(parsed.amount.quantize(_CENT), code)
