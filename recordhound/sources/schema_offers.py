"""Several offers in one page's schema.org markup: one per format (``MusicAlbum.albumRelease[]``,
``ProductGroup.hasVariant[]``) or per copy (``Product.offers[]``, ``AggregateOffer.offers[]``).

Each offer takes what its own node says and falls back to its release / variant node: the
format from the release's name or ``musicReleaseFormat``, the barcode from ``gtin13`` (or
``gtin``, ``gtin12``, ``gtin14``, ``gtin8``), the shop's own id from the offer URL's variant
(Shopify's ``?variant=<id>``: SKUs there are optional and often repeated), ``sku`` or ``@id``, else
the parent's (``offer_ids`` then tells repeats apart by place: see docs/shops.md). The price is ``price``,
``lowPrice`` or the ``priceSpecification`` to pay (not a StrikethroughPrice / ListPrice / MSRP).
A page with one plain offer gives none here: its fields are the page's own.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from recordhound.items import RawOffer
from recordhound.music import format_name
from recordhound.sources.structured import strings, types

GTIN_KEYS = ("gtin13", "gtin", "gtin12", "gtin14", "gtin8", "isbn")
# schema.org PriceTypeEnumeration (and Google's StrikethroughPrice): prices shown beside the one to pay
_NOT_TO_PAY = frozenset(("strikethroughprice", "listprice", "msrp", "srp", "minimumadvertisedprice"))
Node = dict[str, Any]


def listed(value: Any) -> list[Node]:
    """One node or a list of nodes, as a list of the dicts in it."""
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]


def first(node: Node, *keys: str) -> str | None:
    for key in keys:
        found = strings(node.get(key))
        if found:
            return found[0]
    return None


def offers_of(node: Node) -> list[RawOffer]:
    """The page's offers, one per format or copy; empty when it has a single plain offer."""
    releases = listed(node.get("albumRelease"))
    if releases:
        return [offer for release in releases for offer in _variant_offers(release)]
    variants = listed(node.get("hasVariant"))
    if variants:
        return [offer for variant in variants for offer in _variant_offers(variant)]
    offers = _plain_offers(node.get("offers"))
    copies = any("AggregateOffer" in types(o) for o in listed(node.get("offers")))  # a list of copies, even of one
    return [_offer(o, node) for o in offers] if len(offers) > 1 or (copies and offers) else []


def _plain_offers(value: Any, lone: bool = False) -> list[Node]:
    """Offers, the offers inside an AggregateOffer; an AggregateOffer that lists none is an offer (its
    ``lowPrice``) only when ``lone``: a release's or variant's, not the product's (its fields are the page's)."""
    found: list[Node] = []
    for offer in listed(value):
        if "AggregateOffer" in types(offer):
            found += listed(offer.get("offers")) or ([offer] if lone else [])
        else:
            found.append(offer)
    return found


def _variant_offers(variant: Node) -> list[RawOffer]:
    offers = _plain_offers(variant.get("offers"), lone=True)
    return [_offer(offer, variant, len(offers) > 1, variant=True) for offer in offers]


def _offer(offer: Node, parent: Node, several: bool = True, variant: bool = False) -> RawOffer:
    """``parent``: a release / variant (its name may be the format: '12" Vinyl') or the product
    (its name is the title, its ``musicReleaseFormat`` the format)."""
    item = listed(offer.get("itemOffered"))
    own = item[0] if item else {}
    name = first(offer, "name") if several else None
    return RawOffer(
        external_id=(_variant_id(first(offer, "url")) or first(offer, "sku", "@id") or first(own, "sku", "@id")
                     or first(parent, "sku", "@id")),
        format=_format([first(own, "name"), first(own, "musicReleaseFormat"), name,
                        *([first(parent, "name"), first(parent, "musicReleaseFormat")] if variant else
                          [first(parent, "musicReleaseFormat")])]),
        condition=first(offer, "itemCondition") or first(own, "itemCondition") or first(parent, "itemCondition"),
        media_grade=_property(offer, "media", "mediaCondition") or _property(own, "media", "mediaCondition"),
        sleeve_grade=_property(offer, "sleeve", "sleeveCondition") or _property(own, "sleeve", "sleeveCondition"),
        price=first(offer, "price", "lowPrice") or first(_spec(offer), "price"),
        currency=first(offer, "priceCurrency") or first(_spec(offer), "priceCurrency"),
        availability=first(offer, "availability"),
        barcode=first(offer, *GTIN_KEYS) or first(own, *GTIN_KEYS) or first(parent, *GTIN_KEYS),
        url=first(offer, "url") if offer.get("url") != parent.get("url") else None,
        machine_price=True,
    )


def _variant_id(url: str | None) -> str | None:
    """The variant an offer URL names (``/products/x?variant=4400000``), the shop's own id for it."""
    found = parse_qs(urlsplit(url).query).get("variant") if url else None
    return found[0] if found and found[0].strip() else None


def _format(candidates: list[str | None]) -> str | None:
    """The first candidate that names a format ("12\" Vinyl", VinylFormat); a release's own title
    ("Common Assault EP") is not one."""
    return next((c for c in candidates if c and format_name(c)), None)


def _spec(offer: Node) -> Node:
    """The price specification of the price to pay now: not a crossed-out, list or recommended one."""
    for spec in listed(offer.get("priceSpecification")):
        kind = first(spec, "priceType")
        if not kind or kind.rstrip("/").rsplit("/", 1)[-1].lower() not in _NOT_TO_PAY:
            return spec
    return {}


def _property(node: Node, word: str, key: str) -> str | None:
    """A grade: its own key, or an ``additionalProperty`` whose name mentions ``word``."""
    direct = first(node, key)
    if direct:
        return direct
    for prop in listed(node.get("additionalProperty")):
        if word in (first(prop, "name") or "").lower():
            return first(prop, "value")
    return None
