"""``structured: schema.org``: where each field sits in a page's Product / MusicAlbum /
MusicRelease / Offer markup, tried in JSON-LD first, then microdata, then Open Graph / product
meta tags and loose ``itemprop`` attributes.

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
    "catalog_number": ("catalogNumber", "albumRelease[?catalogNumber].catalogNumber | [0]"),
    "year": ("datePublished || releaseDate || releaseOf.datePublished",),
    "styles": ("genre || releaseOf.genre",),
    "price": (_OFFER.format("price"), "offers.lowPrice || offers[0].lowPrice"),
    "currency": (_OFFER.format("priceCurrency"),),
    "in_stock": (_OFFER.format("availability"),),
    "barcode": ("gtin13 || gtin || gtin12 || gtin14 || gtin8", _OFFER.format("gtin13"),
                "albumRelease[0].gtin13 || hasVariant[0].gtin13"),
    "format": ("musicReleaseFormat", "releaseOf.musicReleaseFormat"),
    "condition": (_OFFER.format("itemCondition"), "itemCondition"),
    "country": ("countryOfOrigin", "releaseOf.countryOfOrigin"),
}
_META = 'meta[property="{0}"]::attr(content), meta[name="{0}"]::attr(content)'
# Open Graph / product meta tags and itemprops outside a complete item: after JSON-LD and microdata.
# (selector, machine-readable): a meta tag's content is a number with "." for decimals.
FALLBACKS: dict[str, tuple[tuple[str, bool], ...]] = {
    "external_id": ((_META.format("product:retailer_item_id"), True), ("[itemprop=sku]::attr(content)", True),
                    ("[itemprop=sku]::text", False)),
    "title": (("[itemprop=name]::attr(content)", False), (_META.format("og:title"), False)),
    "catalog_number": (("[itemprop=catalogNumber]::attr(content)", False), ("[itemprop=catalogNumber]::text", False)),
    "price": ((_META.format("product:price:amount"), True), (_META.format("og:price:amount"), True),
              ("[itemprop=price]::attr(content)", True), ("[itemprop=price]::text", False)),
    "currency": ((_META.format("product:price:currency"), False), (_META.format("og:price:currency"), False),
                 ("[itemprop=priceCurrency]::attr(content)", False), ("[itemprop=priceCurrency]::text", False)),
    "in_stock": ((_META.format("product:availability"), False), (_META.format("og:availability"), False),
                 ("[itemprop=availability]::attr(href)", False), ("[itemprop=availability]::attr(content)", False)),
    "barcode": (("[itemprop^=gtin]::attr(content)", False), ("[itemprop^=gtin]::text", False)),
}


def default_field(name: str, required: bool) -> FieldSpec:
    selectors = tuple(SelectorSpec(kind, path) for kind in ("jsonld", "microdata") for path in PATHS[name])
    loose = tuple(SelectorSpec("css", css, machine) for css, machine in FALLBACKS.get(name, ()))
    return FieldSpec(name, selectors + loose, required)
