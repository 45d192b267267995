"""``structured: schema.org``: where each field sits in a page's Product / MusicAlbum /
MusicRelease / Offer markup, tried in JSON-LD first, then microdata.

A profile's own field spec wins; these fill the fields it does not name. Paths are JMESPath on the
product node; ``a || b`` takes the first that exists (``offers`` may be one Offer or a list).
"""

from __future__ import annotations

from recordhound.sources.profile import FieldSpec, SelectorSpec

STANDARDS = ("schema.org",)
_OFFER = "offers.{0} || offers[0].{0} || offers.offers[0].{0}"  # an Offer, a list, an AggregateOffer's
PATHS: dict[str, tuple[str, ...]] = {
    "external_id": ("sku || gtin13 || gtin12 || gtin || mpn || productID", _OFFER.format("sku")),
    "title": ("name",),
    "artists": ("byArtist || releaseOf.byArtist || author",),
    "label": ("recordLabel || releaseOf.recordLabel || brand || publisher",),
    "catalog_number": ("catalogNumber",),
    "year": ("datePublished || releaseDate || releaseOf.datePublished",),
    "styles": ("genre || releaseOf.genre",),
    "price": (_OFFER.format("price"), "offers.lowPrice || offers[0].lowPrice"),
    "currency": (_OFFER.format("priceCurrency"),),
    "in_stock": (_OFFER.format("availability"),),
}


def default_field(name: str, required: bool) -> FieldSpec:
    selectors = tuple(SelectorSpec(kind, path) for kind in ("jsonld", "microdata") for path in PATHS[name])
    return FieldSpec(name, selectors, required)
