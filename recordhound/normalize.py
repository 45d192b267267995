"""Turn a :class:`RawRelease` into a typed :class:`Release`, recording every field that fails."""

from __future__ import annotations

from collections.abc import Callable

from dataclasses import dataclass, field

from recordhound.exceptions import FieldError
from recordhound.items import FieldProblem, RawRelease, Release
from recordhound.prices import ImplausiblePrice, parse_price
from recordhound.sources.profile import Profile
from recordhound.text import DEFAULT_NAME_SEPARATORS, clean, parse_bool, parse_year, split_names


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
    artists = split_names(raw.artists, _separators(profile, "artists"))
    missing = [name for name, value in (("title", title), ("artists", artists)) if not value]
    for name in missing:
        problem(name, "required field is empty")
    if missing:
        return Outcome(None, problems, f"required field(s) missing: {', '.join(missing)}")
    release = Release(
        source=raw.source, url=raw.url, external_id=clean(raw.external_id) or raw.url,
        title=title or "", artists=artists, label=clean(raw.label),
        catalog_number=clean(raw.catalog_number),
        styles=split_names(raw.styles, _separators(profile, "styles", ())),
        problems=problems, line=raw.line,
    )
    release.year = parse_year(raw.year)
    if raw.year and release.year is None:
        problem("year", f"no year in {raw.year!r}")
    release.in_stock = parse_bool(raw.in_stock)
    if raw.in_stock and release.in_stock is None:
        problem("in_stock", f"cannot tell stock from {raw.in_stock!r}")
    try:
        _price(raw, profile, release, problem)
    except ImplausiblePrice as exc:  # a wrong number is worse than none: the item waits for a fix
        problem("price", str(exc))
        return Outcome(None, problems, f"implausible price: {exc}", exc)
    return Outcome(release, problems)


def _price(raw: RawRelease, profile: Profile, release: Release, problem: Callable[[str, str], None]) -> None:
    if profile.field("price") is None:
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
