"""Turn a :class:`RawRelease` into a typed :class:`Release`, recording every field that fails."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from recordhound.exceptions import FieldError
from decimal import Decimal

from recordhound import music
from recordhound.items import FieldProblem, Offer, RawRelease, Release
from recordhound.offer_names import offer_ids
from recordhound.sources.title_rules import split_title
from recordhound.prices import ImplausiblePrice, parse_price
from recordhound.sources.profile import Profile
from recordhound.text import DEFAULT_NAME_SEPARATORS, clean, parse_bool, parse_year, split_catalog_numbers, split_names


@dataclass
class Outcome:
    release: Release | None
    problems: list[FieldProblem] = field(default_factory=list)
    rejected: str | None = None  # why the item cannot be stored
    implausible: ImplausiblePrice | None = None  # the price that got it rejected, with what it read as


def normalize_release(raw: RawRelease, profile: Profile) -> Outcome:
    problems: list[FieldProblem] = []

    def problem(name: str, reason: str) -> None:
        problems.append(FieldProblem(name, reason, raw.url))

    title = clean(raw.title)
    split = split_title(title, profile.title_rules) if title and profile.title_rules else {}
    title = split.get("title", title)
    artists = split_names(raw.artists or ([split["artists"]] if "artists" in split else []),
                          _separators(profile, "artists"))
    missing = [name for name, value in (("title", title), ("artists", artists)) if not value]
    for name in missing:
        problem(name, "required field is empty")
    if missing:
        return Outcome(None, problems, f"required field(s) missing: {', '.join(missing)}")
    release = Release(
        source=raw.source, url=raw.url, external_id=clean(raw.external_id) or raw.url,
        title=title or "", artists=artists, label=clean(raw.label) or split.get("label"),
        catalog_numbers=split_catalog_numbers(clean(raw.catalog_number) or split.get("catalog_number")),
        format=music.format_name(raw.format or split.get("format")), condition=music.condition(raw.condition),
        country=clean(raw.country),
        styles=split_names(raw.styles, _separators(profile, "styles", ())),
        problems=problems, line=raw.line,
    )
    release.catalog_number = next(iter(release.catalog_numbers), None)
    release.year = parse_year(raw.year)
    if raw.year and release.year is None:
        problem("year", f"no year in {raw.year!r}")
    release.availability = music.availability(raw.in_stock)
    release.in_stock = parse_bool(raw.in_stock) if release.availability is None else (
        release.availability == "in_stock")
    if raw.in_stock and release.in_stock is None:
        problem("in_stock", f"cannot tell stock from {raw.in_stock!r}")
    release.barcode = _barcode(raw.barcode, problem)
    try:
        _price(raw, profile, release, problem)
        release.offers = _offers(raw, profile, release, problem)
    except ImplausiblePrice as exc:  # a wrong number is worse than none: the item waits for a fix
        problem("price", str(exc))
        return Outcome(None, problems, f"implausible price: {exc}", exc)
    return Outcome(release, problems)


def _offers(raw: RawRelease, profile: Profile, release: Release, problem: Callable[[str, str], None]) -> list[Offer]:
    """Each offer with its own price and stock, under the shop's id for it or, without one, a name
    (``offer_ids``) that does not depend on where on the page the offer stands."""
    offers: list[Offer] = []
    for found in raw.offers:
        money = _money(found.price, found.currency, profile, found.machine_price, problem)
        fmt, cond = music.format_name(found.format), music.condition(found.condition)
        grades = music.grade(found.media_grade), music.grade(found.sleeve_grade)
        state = music.availability(found.availability)
        if found.availability and state is None:
            problem("availability", f"cannot tell stock from {found.availability!r}")
        offers.append(Offer(
            clean(found.external_id) or "", raw.url, fmt, cond or ("used" if any(grades) else None),
            grades[0], grades[1], money[0], money[1], state, _barcode(found.barcode, problem)))  # url: the page
    ids = offer_ids(release.external_id, offers)
    for offer_id, repeated in {i: n for i, n in Counter(o.external_id for o in offers if o.external_id).items()
                               if n > 1}.items():
        problem("offers", f"the shop's offer id {offer_id!r} is on the page {repeated} times: "
                          f"the later ones are stored as {offer_id}~2, ~3, ...")
    return [replace(offer, external_id=offer_id) for offer, offer_id in zip(offers, ids)]


def _money(text: str | None, currency: str | None, profile: Profile, machine: bool,
           problem: Callable[[str, str], None]) -> tuple[Decimal | None, str | None]:
    if not text:
        return None, None
    try:
        money = parse_price(text, currency_text=clean(currency), default_currency=profile.price.default_currency,
                            symbols=dict(profile.price.currency_symbols), rule_for=profile.price.rule_for,
                            schema_number=machine)
    except ImplausiblePrice:
        raise
    except FieldError as exc:
        problem("price", str(exc))
        return None, None
    return money.amount, money.currency


def _barcode(text: str | None, problem: Callable[[str, str], None]) -> str | None:
    code = music.barcode(text)
    if text and code is None:
        digits = "".join(text.split()).replace("-", "")
        if digits.isdigit() and music.placeholder(digits):
            problem("barcode", f"{text!r} is a placeholder (one digit repeated), not a record's barcode")
        else:
            problem("barcode", f"{text!r} is not an EAN/UPC (8, 12, 13 or 14 digits with a valid check digit)")
    return code


def _price(raw: RawRelease, profile: Profile, release: Release, problem: Callable[[str, str], None]) -> None:
    if profile.field("price") is None or (raw.offers and not raw.price):  # each offer has its own price
        return
    try:
        money = parse_price(
            raw.price, currency_text=clean(raw.currency),
            default_currency=profile.price.default_currency,
            symbols=dict(profile.price.currency_symbols),
            rule_for=profile.price.rule_for,
            schema_number="price" in raw.structured,
        )
    except ImplausiblePrice:
        raise
    except FieldError as exc:
        problem("price", str(exc))
        return
    release.price, release.currency = money.amount, money.currency


def _separators(profile: Profile, name: str, default: tuple[str, ...] = DEFAULT_NAME_SEPARATORS) -> tuple[str, ...]:
    spec = profile.field(name)
    return spec.split if spec and spec.split else default
