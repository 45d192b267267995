"""Apply a profile's selectors to a response: links by kind, and the raw fields of a product."""

from __future__ import annotations

from dataclasses import dataclass

from parsel import Selector, SelectorList
from scrapy.http import TextResponse

from recordhound.items import RawOffer, RawRelease
from recordhound.sources.profile import MANY_FIELDS, STRUCTURED_KINDS, FieldSpec, OffersSpec, Profile, SelectorSpec
from recordhound.sources.schema_offers import offers_of
from recordhound.sources.structured import StructuredData
from recordhound.sources.text_fields import fill_from_text
from recordhound.text import clean


@dataclass(frozen=True)
class FieldMatch:
    """What one field's selectors found: the values and the selector that found them."""

    values: list[str]
    selector: SelectorSpec | None
    tried: tuple[SelectorSpec, ...]

    @property
    def structured(self) -> bool:
        return self.selector is not None and (self.selector.kind in STRUCTURED_KINDS or self.selector.machine)


def select_all(response: TextResponse, selector: SelectorSpec, data: StructuredData | None = None) -> list[str]:
    if selector.kind in STRUCTURED_KINDS:
        found = data.search(selector.kind, selector.query) if data is not None else []
    elif selector.kind == "css":
        found = response.css(selector.query).getall()
    else:
        found = response.xpath(selector.query).getall()
    return [v for v in (clean(x) for x in found) if v]


def structured_data(response: TextResponse, profile: Profile) -> StructuredData:
    """The page's structured data, read once for all fields (nothing when no field uses it)."""
    kinds = profile.structured_kinds
    return StructuredData.of(response, kinds) if kinds else StructuredData()


def match_field(response: TextResponse, spec: FieldSpec, data: StructuredData | None = None) -> FieldMatch:
    """The first selector that finds something wins; the others are fallbacks."""
    for selector in spec.selectors:
        values = select_all(response, selector, data)
        if values:
            return FieldMatch(values, selector, spec.selectors)
    return FieldMatch([], None, spec.selectors)


def extract_links(response: TextResponse, selectors: tuple[SelectorSpec, ...]) -> list[str]:
    urls = [response.urljoin(href) for s in selectors for href in select_all(response, s)]
    return list(dict.fromkeys(urls))


def extract_release(response: TextResponse, profile: Profile, data: StructuredData | None = None) -> RawRelease:
    data = data if data is not None else structured_data(response, profile)
    raw = RawRelease(source=profile.name, url=response.url)
    for name, spec in profile.fields.items():
        found = match_field(response, spec, data)
        if name in MANY_FIELDS:
            setattr(raw, name, found.values)
        elif found.values:
            setattr(raw, name, " ".join(found.values))
        if found.structured:
            raw.structured.append(name)
    raw.offers = extract_offers(response, profile, data)
    if profile.visible_text:  # markup first; the page's text only for what it left empty
        fill_from_text(response.selector, raw, profile.price.default_currency)
    return raw


def extract_offers(response: TextResponse, profile: Profile, data: StructuredData) -> list[RawOffer]:
    """The page's offers: the profile's ``offers:`` block, else (``structured: schema.org``) the
    markup's releases, variants or offer lists; empty when the page is one offer."""
    if profile.offers is not None:
        return [_offer(element, profile.offers) for element in select_elements(response, profile.offers.each)]
    if profile.structured:
        for kind in ("jsonld", "microdata"):
            node = data.nodes.get(kind)
            found = offers_of(node) if node is not None else []
            if found:
                return found
    return []


def select_elements(response: TextResponse, selector: SelectorSpec) -> SelectorList[Selector]:
    return response.css(selector.query) if selector.kind == "css" else response.xpath(selector.query)


def _offer(element: Selector, spec: OffersSpec) -> RawOffer:
    offer = RawOffer()
    for name, selectors in spec.fields.items():
        for selector in selectors:
            found = element.css(selector.query) if selector.kind == "css" else element.xpath(selector.query)
            values = [v for v in (clean(x) for x in found.getall()) if v]
            if values:
                setattr(offer, name, " ".join(values))
                break
    return offer
