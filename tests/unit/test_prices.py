from __future__ import annotations

from decimal import Decimal

import pytest

from recordhound.exceptions import FieldError
from recordhound.prices import parse_price


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("€12,99", "12.99", "EUR"),
    ("$1,299.00", "1299.00", "USD"),
    ("1 299,00 ₽", "1299.00", "RUB"),
    ("1\u202f299,00 ₽", "1299.00", "RUB"),
    ("12.99 EUR", "12.99", "EUR"),
    ("12,99 €", "12.99", "EUR"),
    ("£7.50", "7.50", "GBP"),
])
def test_shop_price_formats(text: str, amount: str, currency: str) -> None:
    money = parse_price(text)
    assert (money.amount, money.currency) == (Decimal(amount), currency)


def test_currency_hint_and_default() -> None:
    assert parse_price("12.00", default_currency="EUR").currency == "EUR"
    assert parse_price("$5", symbols={"$": "CAD"}).currency == "CAD"


@pytest.mark.parametrize(("text", "problem"), [
    ("Price on request", "no amount"),
    ("", "no price"),
    (None, "no price"),
    ("12.99", "no currency"),
])
def test_unparseable_prices_say_why(text: str | None, problem: str) -> None:
    with pytest.raises(FieldError, match=problem):
        parse_price(text)
