from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from recordhound.exceptions import FieldError
from recordhound.prices import (CACHED_TEXT_LENGTH, AmbiguousPrice, ImplausiblePrice, Money, PriceRule, SeveralPrices,
                                UnknownCurrency, parse_price)
from recordhound.price_text import cached_reading


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
    wide = _rules(EUR=PriceRule(range=(Decimal(1), Decimal(20000))))
    assert parse_price("€9.999,00", rule_for=wide).amount == Decimal("9999.00")


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
    cached_reading.cache_clear()
    for n in range(50):
        blob = f"EUR {n} " + "x" * 10_000
        assert parse_price("12.50", currency_text=blob) == Money(Decimal("12.50"), "EUR")
    assert cached_reading.cache_info().currsize == 0


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("2LP 24,99 €", "24.99", "EUR"),
    ('12" Vinyl 9,99 €', "9.99", "EUR"),
    ('7" Single £4.50', "4.50", "GBP"),
    ("3CD Box $29.99", "29.99", "USD"),
    ("19,99 € inkl. 19% MwSt.", "19.99", "EUR"),
    ("180g LP 22,50 €", "22.50", "EUR"),
    ("24,99 € 2LP", "24.99", "EUR"),  # the € between them is the price's, not the count's
    ("12,99 €/Stück", "12.99", "EUR"),
])
def test_the_one_amount_with_a_currency_is_the_price_beside_format_counts(
        text: str, amount: str, currency: str) -> None:
    assert parse_price(text, default_currency="EUR") == Money(Decimal(amount), currency)


@pytest.mark.parametrize("text", [
    "Was £20.00 Now £15.00",
    "Was 20 Now £15",
    "2 for £10",
    "3 x 12,99 €",
    "3x 12,99 €",
    "12.99 - 19.99",
    "From £5 to £9",
    "9.99€ - 14.99€",
    "20,00 € 15,00 €",
    "20,00\u00a0€ 15,00\u00a0€",  # WooCommerce <del>…</del> <ins>…</ins> read whole
    "Sale! £12.99 £9.99",
    "£15 + £3 shipping",
    "€ 12,99 inkl. MwSt. zzgl. 4,90 Versand",
    "Reissue 2024 24,99 €",
    "€20 €15",
    "€ 20 € 15",
])
def test_a_text_with_several_prices_is_a_problem_not_a_guess(text: str) -> None:
    with pytest.raises(SeveralPrices, match="several prices") as caught:
        parse_price(text, default_currency="EUR")
    assert text.replace("\u00a0", " ")[:12] in str(caught.value)


def test_the_problem_shows_a_long_text_shortened() -> None:
    text = "Was £20.00 Now £15.00 " + "free shipping on orders over fifty pounds " * 5
    with pytest.raises(SeveralPrices) as caught:
        parse_price(text)
    assert "Was £20.00 Now £15.00" in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.parametrize(("text", "currency"), [
    ("AU$ 30.00", "AUD"), ("A$20.00", "AUD"), ("NZ$30.00", "NZD"), ("HK$ 100", "HKD"), ("R$ 50,00", "BRL"),
    ("S$ 25.00", "SGD"), ("US$10.00", "USD"), ("C$ 15", "CAD"), ("CA$ 15", "CAD"), ("CHF 12.50", "CHF"),
    ("49,99 zł", "PLN"), ("499 Kč", "CZK"), ("12,99 Euro", "EUR"),
])
def test_printed_currency_symbols_name_their_currency_not_the_default(text: str, currency: str) -> None:
    assert parse_price(text, default_currency="EUR").currency == currency


@pytest.mark.parametrize(("text", "default", "currency"), [
    ("$25.00", "CAD", "CAD"), ("$25.00", "AUD", "AUD"), ("$25.00", "EUR", "USD"), ("$25.00", None, "USD"),
    ("199 kr", "DKK", "DKK"), ("kr 199", "NOK", "NOK"), ("199,00 kr", "SEK", "SEK"),
    ("¥1200", "CNY", "CNY"), ("¥1200", "EUR", "JPY"),
])
def test_a_symbol_several_currencies_share_means_the_default_when_it_is_one_of_them(
        text: str, default: str | None, currency: str) -> None:
    assert parse_price(text, default_currency=default).currency == currency


def test_the_profile_symbols_beat_the_shared_symbol_rule() -> None:
    assert parse_price("199 kr", default_currency="DKK", symbols={"kr": "SEK"}).currency == "SEK"
    assert parse_price("$25.00", default_currency="CAD", symbols={"$": "USD"}).currency == "USD"


@pytest.mark.parametrize("text", ["199 kr", "DM 20", "Rs. 500", "12 ₿"])
def test_a_printed_currency_that_is_not_known_is_a_problem_not_the_default(text: str) -> None:
    with pytest.raises(UnknownCurrency, match="currency_symbols"):
        parse_price(text, default_currency="EUR")


@pytest.mark.parametrize(("text", "default", "amount", "currency"), [
    ("١٢٫٥٠", "EUR", "12.50", "EUR"),
    ("۱۲٫۵۰ €", "EUR", "12.50", "EUR"),
    ("١٢.٥٠ €", "EUR", "12.50", "EUR"),
    ("１２．５０ €", "EUR", "12.50", "EUR"),
    ("１，２５０．００円", "JPY", "1250.00", "JPY"),
])
def test_digits_of_other_scripts_read_as_the_same_number(text: str, default: str, amount: str, currency: str) -> None:
    assert parse_price(text, default_currency=default) == Money(Decimal(amount), currency)


@pytest.mark.parametrize(("text", "problem"), [
    ("-5.00", "negative"), ("\u22125,00 €", "negative"), ("€-5", "negative"), ("-€5", "negative"),
    ("1e5", "exponent"), ("1.5E3 €", "exponent"),
])
def test_a_sign_or_an_exponent_is_a_problem_not_dropped(text: str, problem: str) -> None:
    with pytest.raises(FieldError, match=problem):
        parse_price(text, default_currency="EUR")


def test_a_hyphen_inside_a_word_is_not_a_minus_sign() -> None:
    assert parse_price("LP-12,99 €") == Money(Decimal("12.99"), "EUR")


@pytest.mark.parametrize(("number", "amount"), [
    ("19.990000000000002", "19.99"),  # float noise of 19.99
    ("19.989999999999998", "19.99"),
    ("19.992", "19.99"),  # 16.80 * 1.19, computed: the shop charges the cent
    ("16.806", "16.81"),
    ("20.00784", "20.01"),
])
def test_a_structured_number_with_sub_cent_digits_is_rounded_to_the_cent(number: str, amount: str) -> None:
    assert parse_price(number, currency_text="EUR", schema_number=True) == Money(Decimal(amount), "EUR")


def test_a_structured_number_that_could_be_thousands_or_a_half_cent_is_not_rounded() -> None:
    with pytest.raises(ImplausiblePrice, match="does not fit"):
        parse_price("1.299", currency_text="EUR", schema_number=True)  # 1299 is a price too
    with pytest.raises(AmbiguousPrice, match="half a cent"):
        parse_price("19.985", currency_text="EUR", schema_number=True)  # how does the shop round?
    with pytest.raises(AmbiguousPrice):
        parse_price("€19.992")  # printed on the page, not a number from structured data


@pytest.mark.parametrize(("text", "default", "currency"), [
    ("$24.99 CAD", None, "CAD"), ("$24.99 (CAD)", None, "CAD"), ("24.99 $ CAD", None, "CAD"),
    ("$ 24.99 CAD", "USD", "CAD"), ("$24.99 AUD", "USD", "AUD"), ("$24.99 NZD", "CAD", "NZD"),
    ("$24.99 USD", "CAD", "USD"), ("CAD 24.99 $", None, "CAD"),
    ("249 kr SEK", None, "SEK"), ("kr 249 NOK", None, "NOK"), ("249 kr NOK", "SEK", "NOK"), ("¥3300 CNY", None, "CNY"),
    ("24,99 € EUR", "USD", "EUR"), ("$19.99USD", "CAD", "USD"), ("€19.99 ALL INCLUSIVE", None, "EUR"),
])
def test_an_iso_code_beside_the_amount_decides_among_the_currencies_of_its_symbol(
        text: str, default: str | None, currency: str) -> None:
    assert parse_price(text, default_currency=default).currency == currency


@pytest.mark.parametrize("text", ["€24.99 USD", "£19.99 EUR", "$24.99 SEK", "EUR 12 USD"])
def test_a_code_that_is_not_one_of_the_symbols_currencies_is_a_problem(text: str) -> None:
    with pytest.raises(UnknownCurrency, match="different currencies"):
        parse_price(text, default_currency="EUR")


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("Sale price€19,99", "19.99", "EUR"),
    ("Sale\u00a0price€19,99", "19.99", "EUR"),
    ("Regular price£19.99", "19.99", "GBP"),
    ("Prezzo€19,99", "19.99", "EUR"),
    ("19,99 €inkl. MwSt.", "19.99", "EUR"),
    ("19,99€inkl. MwSt.", "19.99", "EUR"),
    ("19,99 €¹", "19.99", "EUR"),
    ("19,99 €²", "19.99", "EUR"),
    ("CAD$19.99", "19.99", "CAD"),
    ("Sale price$24.99 CAD", "24.99", "CAD"),
])
def test_a_currency_symbol_glued_to_a_word_is_still_the_symbol(text: str, amount: str, currency: str) -> None:
    assert parse_price(text) == Money(Decimal(amount), currency)


def test_an_unknown_prefix_glued_to_a_symbol_is_not_the_plain_symbol() -> None:
    with pytest.raises(UnknownCurrency, match="'XY\\$'"):
        parse_price("XY$ 12")


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("19,99 € - 1 Stk", "19.99", "EUR"),
    ("19,99 € - 1 Stück", "19.99", "EUR"),
    ("$19.99 Ships in 1-2 days", "19.99", "USD"),
    ("19,99 € 1-2 Werktage", "19.99", "EUR"),
    ("19,99 €\n2-3 Tage", "19.99", "EUR"),
    ("Lieferzeit 2-3 Tage 19,99 €", "19.99", "EUR"),
    ("€12.99 · Vinyl LP · 2024", "12.99", "EUR"),  # a 4-digit year is not a price
    ("€12.99 - LP - 2024", "12.99", "EUR"),
    ("Vinyl LP (2024) 12,99 €", "12.99", "EUR"),
    ("Remastered 2016 - €24,99", "24.99", "EUR"),
    ("€24,99 - 180g", "24.99", "EUR"),  # a number glued to a unit is not a price
    ("LP (180g) €24,99", "24.99", "EUR"),
    ('24,99 EUR (Gatefold, 2x12")', "24.99", "EUR"),  # a format, not a multi-buy
    ("€19,99 (2 x LP)", "19.99", "EUR"),
    ("Preis: 24,99 € (Stand: 01.12.2026)", "24.99", "EUR"),  # a date is not a price
    ("19.99 (1)", "19.99", "USD"),
])
def test_page_text_beside_one_price_is_not_a_second_price(text: str, amount: str, currency: str) -> None:
    assert parse_price(text, default_currency="USD") == Money(Decimal(amount), currency)


@pytest.mark.parametrize("text", [
    "12 - 19 €",  # a hyphen between two amounts that both look like prices is a range
    "12.99 to 19.99",
    "£10 for 2",
    "Reissue 2024 24,99 €",  # a year right beside the price could be one misprinted number
    "$19.99 · 4.5 stars",  # an amount with cents could be a price
    "€24.99 / £21.99",
    "£19.99 exc. VAT £23.99 inc. VAT",
])
def test_amounts_that_look_like_prices_are_still_several(text: str) -> None:
    with pytest.raises(SeveralPrices):
        parse_price(text, default_currency="EUR")


@pytest.mark.parametrize(("text", "amount", "currency"), [
    ("€50,85", "50.85", "EUR"), ("57.54 EUR", "57.54", "EUR"), ("5 022,00 ₽", "5022.00", "RUB"),
    ("$50.26", "50.26", "USD"), ("14,82 €", "14.82", "EUR"),
])
def test_the_demo_shops_prices_read_as_before(text: str, amount: str, currency: str) -> None:
    assert parse_price(text) == Money(Decimal(amount), currency)


@pytest.mark.parametrize("number", ["1.000", "25.000", "19.990"])
def test_a_structured_number_with_three_decimals_of_whole_cents_may_be_thousands(number: str) -> None:
    with pytest.raises(ImplausiblePrice, match="does not fit the decimal separator '.'"):
        parse_price(number, default_currency="EUR", schema_number=True)


@pytest.mark.parametrize(("text", "default", "currency"), [
    ("USD $24.99", "CAD", "USD"), ("CAD $24.99", "USD", "CAD"), ("AUD $34.95", "USD", "AUD"),
    ("NZD $39.99", "AUD", "NZD"), ("US $24.99", "CAD", "USD"), ("$24.99 US", "CAD", "USD"),
    ("C $24.99", "USD", "CAD"), ("SEK kr 249", "NOK", "SEK"), ("24.99 $ US", "CAD", "USD"),
    ("$24.99 JMD", "USD", "JMD"), ("$24.99 TTD", None, "TTD"), ("$24.99", "JMD", "JMD"), ("$24.99", "TTD", "TTD"),
    ("XCD $24.99", "USD", "XCD"), ("$249 MXN", "USD", "MXN"), ("$24.99 BBD", "USD", "BBD"),
    ("Hot LP $24.99", "CAD", "CAD"), ("ALL $24.99", "CAD", "CAD"),
])
def test_an_iso_code_or_a_prefix_printed_apart_from_the_symbol_decides(
        text: str, default: str | None, currency: str) -> None:
    assert parse_price(text, default_currency=default).currency == currency


@pytest.mark.parametrize("text", ["SEK $24.99", "EUR $24.99", "USD €24.99", "GBP kr 249"])
def test_a_code_before_the_symbol_that_is_not_one_of_its_currencies_is_a_problem(text: str) -> None:
    with pytest.raises(UnknownCurrency, match="different currencies"):
        parse_price(text, default_currency="SEK")


@pytest.mark.parametrize(("text", "default", "amount", "currency"), [
    ("24,90 € sis. alv 25,5 %", "EUR", "24.90", "EUR"),
    ("CHF 29.90 inkl. 8.1% MwSt.", "CHF", "29.90", "CHF"),
    ("19,99 € inkl. 7,7% MwSt.", "EUR", "19.99", "EUR"),
    ("$24.99 (Save 12.5%)", "USD", "24.99", "USD"),
    ("20 % Rabatt: 19,99 €", "EUR", "19.99", "EUR"),
    ("-15% 16,99 €", "EUR", "16.99", "EUR"),
    ("%20 indirim 199,90 ₺", "TRY", "199.90", "TRY"),
    ("24,99 € (inkl. 19 ٪ MwSt.)", "EUR", "24.99", "EUR"),
])
def test_an_amount_with_a_percent_sign_is_never_a_price(text: str, default: str, amount: str, currency: str) -> None:
    assert parse_price(text, default_currency=default) == Money(Decimal(amount), currency)


@pytest.mark.parametrize("text", ["Save 20%", "20% off", "-12,5 %", "％20"])
def test_a_text_with_only_a_percentage_holds_no_price(text: str) -> None:
    with pytest.raises(FieldError, match="no amount"):
        parse_price(text, default_currency="USD")
