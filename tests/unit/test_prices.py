from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from recordhound.exceptions import FieldError
from recordhound.prices import (CACHED_TEXT_LENGTH, AmbiguousPrice, ImplausiblePrice, Money, PriceRule,
                                _cached_reading, parse_price)


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


def _rules(**by_currency: PriceRule) -> Callable[[str], PriceRule]:
    return lambda code: by_currency.get(code, PriceRule())


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("1.234,56 €", "1234.56", "EUR"),
    ("£1,234.56", "1234.56", "GBP"),
    ("1,234,567 ₽", "1234567.00", "RUB"),
    ("15,44 €", "15.44", "EUR"),
])
def test_separators_the_text_proves_are_detected(text: str, amount: str, currency: str) -> None:
    money = parse_price(text, rule_for=_rules(RUB=PriceRule(range=(Decimal(1), Decimal(10**7)))))
    assert (money.amount, money.currency) == (Decimal(amount), currency)


def test_an_ambiguous_price_is_a_problem_not_a_guess() -> None:
    with pytest.raises(AmbiguousPrice, match=r"'1.234 €'.*price.currencies.EUR.decimal_separator"):
        parse_price("1.234 €")
    assert parse_price("1.234 €", rule_for=_rules(EUR=PriceRule(","))).amount == Decimal("1234.00")


def test_a_wrong_decimal_separator_is_implausible_not_100_times_the_price() -> None:
    wrong = _rules(EUR=PriceRule(","), GBP=PriceRule(","))
    assert parse_price("15,44 €", rule_for=wrong).amount == Decimal("15.44")
    with pytest.raises(ImplausiblePrice, match="does not fit the decimal separator ','") as caught:
        parse_price("£34.25", rule_for=wrong)
    assert (caught.value.amount, caught.value.currency) == (Decimal("3425"), "GBP")
    right = _rules(EUR=PriceRule(","), GBP=PriceRule("."))
    assert parse_price("£34.25", rule_for=right).amount == Decimal("34.25")


def test_an_explicit_currency_beats_the_symbol_and_picks_its_rule() -> None:
    money = parse_price("$1.234,50", currency_text="EUR", rule_for=_rules(EUR=PriceRule(",", ".")))
    assert (money.amount, money.currency) == (Decimal("1234.50"), "EUR")


def test_prices_outside_the_plausible_range_are_rejected() -> None:
    with pytest.raises(ImplausiblePrice, match="outside the plausible range 0.50–5000 EUR"):
        parse_price("€9.999,00")
    assert parse_price("€9.999,00", rule_for=_rules(EUR=PriceRule(range=(Decimal(1), Decimal(20000))))).amount == Decimal("9999.00")


def test_structured_numbers_use_the_schema_org_separator_whatever_the_rule() -> None:
    comma = _rules(EUR=PriceRule(","))
    assert parse_price("1234.56", currency_text="EUR", rule_for=comma, schema_number=True).amount == Decimal("1234.56")
    assert parse_price("12,99", currency_text="EUR", rule_for=comma, schema_number=True).amount == Decimal("12.99")


def test_a_price_read_again_keeps_its_own_currency_and_rules() -> None:
    """Readings of a price text are cached: the same text with another currency field, another
    default or another profile rule must still read as that one says."""
    comma = PriceRule(decimal_separator=",")
    assert parse_price("12,50", default_currency="EUR", rule_for=lambda _: comma) == Money(Decimal("12.50"), "EUR")
    assert parse_price("12,50", currency_text="SEK", rule_for=lambda _: comma) == Money(Decimal("12.50"), "SEK")
    with pytest.raises(AmbiguousPrice):
        parse_price("1,250", default_currency="USD")
    assert parse_price("1,250", default_currency="USD",
                       rule_for=lambda _: PriceRule(decimal_separator=".")) == Money(Decimal("1250.00"), "USD")
    long_text = "€ 111 " + "incl. VAT " * 8  # past the cached length: read the same way
    assert len(long_text) > CACHED_TEXT_LENGTH
    assert parse_price(long_text) == parse_price(long_text) == Money(Decimal("111.00"), "EUR")


def test_a_long_scraped_currency_field_is_not_kept() -> None:
    """The cache holds short texts only: a shop whose currency field is a long blob (scraped,
    untrusted, different on every page) must not fill memory with 4,096 of them."""
    _cached_reading.cache_clear()
    for n in range(50):
        blob = f"EUR {n} " + "x" * 10_000
        assert parse_price("12.50", currency_text=blob) == Money(Decimal("12.50"), "EUR")
    assert _cached_reading.cache_info().currsize == 0
