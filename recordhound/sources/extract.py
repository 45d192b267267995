"""Apply a profile's selectors to a response: links by kind, and the raw fields of a product."""

from __future__ import annotations

from dataclasses import dataclass

from scrapy.http import TextResponse

from recordhound.items import RawRelease
from recordhound.sources.profile import MANY_FIELDS, FieldSpec, Profile, SelectorSpec
from recordhound.text import clean


@dataclass(frozen=True)
class FieldMatch:
    """What one field's selectors found: the values and the selector that found them."""

    values: list[str]
    selector: SelectorSpec | None
    tried: tuple[SelectorSpec, ...]


def select_all(response: TextResponse, selector: SelectorSpec) -> list[str]:
    found = response.css(selector.query) if selector.kind == "css" else response.xpath(selector.query)
    return [v for v in (clean(x) for x in found.getall()) if v]


def match_field(response: TextResponse, spec: FieldSpec) -> FieldMatch:
    """The first selector that finds something wins; the others are fallbacks."""
    for selector in spec.selectors:
        values = select_all(response, selector)
        if values:
            return FieldMatch(values, selector, spec.selectors)
    return FieldMatch([], None, spec.selectors)


def extract_links(response: TextResponse, selectors: tuple[SelectorSpec, ...]) -> list[str]:
    urls = [response.urljoin(href) for s in selectors for href in select_all(response, s)]
    return list(dict.fromkeys(urls))


def extract_release(response: TextResponse, profile: Profile) -> RawRelease:
    raw = RawRelease(source=profile.name, url=response.url)
    for name, spec in profile.fields.items():
        values = match_field(response, spec).values
        if name in MANY_FIELDS:
            setattr(raw, name, values)
        elif values:
            setattr(raw, name, " ".join(values))
    return raw
