"""Apply a profile's selectors to a response: links by kind, and the raw fields of a product.

Selectors run as compiled XPath on the page's lxml tree (the one ``response.selector`` parsed):
the same XPath parsel's ``.css()``/``.xpath()`` would run (its CSS translators, its ``re:`` and
``set:`` namespaces and ``has-class()``), and the same strings its ``.getall()`` returns, without
a ``Selector`` object per match (a third of the extraction's CPU on a listing of 48 links).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any
from urllib.parse import urljoin

from lxml import etree
from parsel import Selector
from parsel.csstranslator import GenericTranslator, HTMLTranslator
from scrapy.http import TextResponse
from scrapy.utils.response import get_base_url

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


_NAMESPACES = {"re": "http://exslt.org/regular-expressions", "set": "http://exslt.org/sets"}  # parsel's
_TRANSLATORS = {"html": HTMLTranslator(), "xml": GenericTranslator()}  # also: the types compiled here


# A compiled XPath registers libexslt's functions into its own context on every call when its
# namespaces name one of libexslt's modules (``set:`` here; lxml 6.2, libxml2 2.14): the context keeps
# ~100 bytes a call for as long as the XPath lives, and these live all crawl (cached). So a compiled
# XPath gets only the prefixes its expression names, and one that names ``set:`` runs as parsel runs
# it, with a context per call.
_PER_CALL = frozenset({"set"})


@lru_cache(maxsize=4096)
def compiled(kind: str, query: str, doc_type: str = "html") -> Callable[[etree._Element], Any]:
    """A css or xpath selector as the XPath parsel would evaluate, compiled once."""
    path = _TRANSLATORS[doc_type].css_to_xpath(query) if kind == "css" else query
    namespaces = {prefix: uri for prefix, uri in _NAMESPACES.items() if f"{prefix}:" in path}
    try:
        xpath = etree.XPath(path, namespaces=namespaces, smart_strings=False)
    except etree.XPathError as exc:
        raise ValueError(f"XPath error: {exc} in {query}") from exc
    if _PER_CALL.isdisjoint(namespaces):
        return xpath
    return partial(_evaluate, path=path, namespaces=namespaces)


def _evaluate(root: etree._Element, path: str, namespaces: dict[str, str]) -> Any:
    return root.xpath(path, namespaces=namespaces, smart_strings=False)


def strings(node: Selector, kind: str, query: str) -> list[str]:
    """What ``node.css(query).getall()`` (or ``.xpath``) returns: text and attribute values as
    they are, elements as markup, booleans as "1"/"0", numbers as ``str``."""
    if node.type not in _TRANSLATORS:  # json and text selectors: parsel's own answer (or its error)
        return (node.css(query) if kind == "css" else node.xpath(query)).getall()
    doc_type = node.type
    root = node.root
    if not hasattr(root, "xpath"):  # a text or attribute value: nothing below it
        return []
    try:
        found = compiled(kind, query, doc_type)(root)
    except etree.XPathError as exc:
        raise ValueError(f"XPath error: {exc} in {query}") from exc
    return [_string(value, doc_type) for value in (found if isinstance(found, list) else [found])]


def _string(value: Any, method: str) -> str:  # method: "html" or "xml", as parsel serializes
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, etree._Element):
        return etree.tostring(value, method=method, encoding="unicode", with_tail=False)
    return str(value)


def select_all(response: TextResponse, selector: SelectorSpec, data: StructuredData | None = None) -> list[str]:
    if selector.kind in STRUCTURED_KINDS:
        found = data.search(selector.kind, selector.query) if data is not None else []
    else:
        found = strings(response.selector, selector.kind, selector.query)
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
    base = get_base_url(response)  # what response.urljoin joins with, looked up once
    urls = [urljoin(base, href) for s in selectors for href in select_all(response, s)]
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


def select_elements(response: TextResponse, selector: SelectorSpec) -> list[Selector]:
    return list(response.css(selector.query) if selector.kind == "css" else response.xpath(selector.query))


def _offer(element: Selector, spec: OffersSpec) -> RawOffer:
    offer = RawOffer()
    for name, selectors in spec.fields.items():
        for selector in selectors:
            values = [v for v in (clean(x) for x in strings(element, selector.kind, selector.query)) if v]
            if values:
                setattr(offer, name, " ".join(values))
                break
    return offer
