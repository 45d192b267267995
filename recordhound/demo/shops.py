"""The demo shop's platform-like sections: releases sold in several formats and conditions.

Four sections, each a shop of its own with its own markup (``demo/shop_pages.py``), built from
the catalog's releases (single-artist ones, canonical names) and deterministic per seed:

- ``shopify``: a Shopify-like store (``/shopify/collections/all?page=N``, ``/products.json``,
  ``/products/<handle>(.js|.json)``, a products sitemap with ``lastmod``); one variant per format.
- ``woo``: a WooCommerce-like store (``/woo/shop/``, ``/woo/shop/page/N/``); one format per product,
  its label, catalogue number, year, genre and EAN in the attributes table.
- ``bandcamp``: a Bandcamp-like label page (``/bandcamp/music``); album pages whose JSON-LD has one
  ``albumRelease`` per format, titles written "CATNO // Artist - Title".
- ``market``: a marketplace (``/market/browse/``, ``page-N.html``, German "mehr"); release pages with
  several copies, new and used, with media and sleeve grades.

``section_offers`` is the truth of a section: one entry per offer, with its release's fields.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from recordhound.demo.catalog import Catalog, Product, change_percent, slug

SECTIONS = ("shopify", "woo", "bandcamp", "market")
SIZES = {"shopify": 45, "woo": 30, "bandcamp": 12, "market": 30}  # releases per section (at most)
OFFSETS = {"shopify": 0, "woo": 7, "bandcamp": 3, "market": 11}  # where each section starts in the catalog
GRADES = ("M", "NM", "VG+", "VG", "G+", "G")
SHOPIFY_VARIANT_IDS = 44_000_000_000_000  # Shopify's variant ids are 14-digit numbers
CURRENCY = {"shopify": "EUR", "woo": "EUR", "bandcamp": "EUR", "market": "GBP"}


@dataclass(frozen=True)
class ShopOffer:
    sku: str
    format: str
    cents: int
    availability: str  # in_stock | sold_out | pre_order
    barcode: str | None
    condition: str = "new"
    media_grade: str | None = None
    sleeve_grade: str | None = None
    label: str = ""  # how the shop names the variant ("12\" Vinyl", "LP")
    variant_id: str | None = None  # the shop's own id of the variant (Shopify); the SKU may be empty or repeated

    @property
    def key(self) -> str:
        """How a user finds this offer at the shop: the variant id where there is one, else the SKU."""
        return self.variant_id or self.sku

    def price(self, epoch_cents: int | None = None) -> Decimal:
        return (Decimal(self.cents if epoch_cents is None else epoch_cents) / 100).quantize(Decimal("0.01"))


@dataclass(frozen=True)
class ShopRelease:
    key: str  # the shop's id of the release page (a handle, a slug)
    path: str
    title: str
    artist: str
    label: str
    catno: str  # as the shop prints it: "FLD001 / CAT-2" when a reissue carries two numbers
    year: int | None
    styles: tuple[str, ...]
    offers: tuple[ShopOffer, ...]


def ean13(body: int) -> str:
    digits = f"{body:012d}"[-12:]
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits))
    return digits + str((10 - total % 10) % 10)


def section_releases(catalog: Catalog, section: str) -> list[ShopRelease]:
    rng = random.Random(f"recordhound-{section}:{catalog.seed}")
    chosen = [p for p in catalog.products if p.fault is None and not p.sku.endswith("-U") and len(p.artist_ids) == 1]
    chosen = chosen[OFFSETS[section]:OFFSETS[section] + SIZES[section]]
    return [_release(catalog, section, product, rng, index) for index, product in enumerate(chosen)]


def _release(catalog: Catalog, section: str, product: Product, rng: random.Random, index: int) -> ShopRelease:
    handle = f"{slug(catalog.artist_names[product.artist_ids[0]])}-{slug(product.title)}-{product.release}"
    paths = {"shopify": f"/shopify/products/{handle}", "woo": f"/woo/product/{handle}/",
             "bandcamp": f"/bandcamp/album/{slug(product.title)}-{product.release}",
             "market": f"/market/release/{product.release}-{slug(product.title)}"}
    offers = [_at_epoch(catalog, offer) for offer in OFFER_MAKERS[section](product, rng, index)]
    return ShopRelease(
        key=handle, path=paths[section], title=product.title, artist=catalog.artist_names[product.artist_ids[0]],
        label=product.label, catno=_catno(section, product, index), year=None if section == "shopify" else product.year,
        styles=() if section == "shopify" else tuple(catalog.style_names[i] for i in product.style_ids),
        offers=tuple(offers))


def _catno(section: str, product: Product, index: int) -> str:
    """The WooCommerce-like shop's first release is a reissue with a second number of its own."""
    return f"{product.catno} / RE-{product.release:04d}" if section == "woo" and index == 0 else product.catno


def catalog_numbers(release: ShopRelease) -> list[str]:
    return release.catno.split(" / ")


def _at_epoch(catalog: Catalog, offer: ShopOffer) -> ShopOffer:
    """Prices move with the catalog's epoch, as the classic shop's do (the same rule)."""
    cents = offer.cents
    for step in range(1, catalog.epoch + 1):
        cents = round(cents * (100 + change_percent(catalog.seed, offer.key, step)) / 100)
    return replace(offer, cents=cents)


def _cents(rng: random.Random, low: int, high: int) -> int:
    return rng.randint(low, high) * 50 - 1  # x.49 / x.99


def _availability(rng: random.Random) -> str:
    return rng.choices(("in_stock", "sold_out", "pre_order"), weights=(70, 20, 10))[0]


def _shopify(product: Product, rng: random.Random, index: int) -> list[ShopOffer]:
    """One variant per format; as in real stores, some variants have no SKU (every 5th release's
    CD) and some share one (every 5th release, from the 4th, prints its catalogue number on each)."""
    formats = [("LP", "LP"), ("CD", "CD")] + ([("Cassette", "Cassette")] if index % 3 == 0 else [])
    if index % 4 == 1:
        formats[0] = ("2xLP", "2xLP")
    skus = [product.catno if index % 5 == 3 else f"{product.catno}-{code}" for code, _ in formats]
    if index % 5 == 2:
        skus[1] = ""
    return [ShopOffer(sku, fmt, _cents(rng, 20, 70), rng.choice(("in_stock", "in_stock", "sold_out")),
                      ean13(880_000_000_000 + product.release * 10 + n), label=code,
                      variant_id=str(SHOPIFY_VARIANT_IDS + product.release * 10 + n))
            for n, ((code, fmt), sku) in enumerate(zip(formats, skus))]


def _woo(product: Product, rng: random.Random, index: int) -> list[ShopOffer]:
    fmt, shown = (('12"', "12\" Vinyl"), ("LP", "Vinyl LP"), ('7"', "7\" Single"), ("CD", "CD"))[index % 4]
    return [ShopOffer(f"W{product.release:05d}", fmt, _cents(rng, 12, 60), _availability(rng),
                      ean13(770_000_000_000 + product.release), label=shown)]


def _bandcamp(product: Product, rng: random.Random, index: int) -> list[ShopOffer]:
    physical = [('12"', '12" Vinyl'), ("Cassette", "Cassette"), ("CD", "Compact Disc (CD)")][index % 3]
    return [ShopOffer(f"bc-{product.release}-physical", physical[0], _cents(rng, 18, 36),
                      "sold_out" if index % 3 == 1 else "in_stock", ean13(660_000_000_000 + product.release),
                      label=physical[1]),
            ShopOffer(f"bc-{product.release}-digital", "Digital", _cents(rng, 8, 16), "in_stock", None,
                      label="Digital Album")]


def _market(product: Product, rng: random.Random, index: int) -> list[ShopOffer]:
    offers = []
    for n in range(1 + index % 4):
        media = rng.choice(GRADES)
        sleeve = rng.choice(GRADES[GRADES.index(media):] or GRADES)
        offers.append(ShopOffer(f"m{product.release}-{n + 1}", "LP", _cents(rng, 6, 90), "in_stock", None,
                                "used", media, sleeve, label="Vinyl, LP"))
    if index % 3 == 0:
        offers.append(ShopOffer(f"m{product.release}-new", "LP", _cents(rng, 40, 70), "in_stock", None, "new",
                                label="Vinyl, LP"))
    return offers


OFFER_MAKERS = {"shopify": _shopify, "woo": _woo, "bandcamp": _bandcamp, "market": _market}


def section_offers(section: str, releases: list[ShopRelease]) -> dict[str, Any]:
    offers = [{
        "external_id": offer.key, "path": release.path, "title": release.title, "artists": [release.artist],
        "label": release.label, "catalog_number": catalog_numbers(release)[0],
        "catalog_numbers": catalog_numbers(release), "year": release.year,
        "styles": list(release.styles), "price": str(offer.price()), "currency": CURRENCY[section],
        "in_stock": offer.availability == "in_stock", "availability": offer.availability, "format": offer.format,
        "condition": offer.condition, "media_grade": offer.media_grade, "sleeve_grade": offer.sleeve_grade,
        "barcode": offer.barcode,
    } for release in releases for offer in release.offers]
    counts = {
        "releases": len(releases), "offers": len(offers), "artists": len({r.artist for r in releases}),
        "labels": len({r.label for r in releases}), "styles": len({s for r in releases for s in r.styles}),
        "offers_without_price": 0, "rejected": 0, "invalid": 0,
    }
    return {"counts": counts, "faults": {}, "offers": offers, "first_listing": FIRST_LISTING[section]}


FIRST_LISTING = {"shopify": "/shopify/collections/all", "woo": "/woo/shop/", "bandcamp": "/bandcamp/music",
                 "market": "/market/browse/"}


def sections_truth(catalog: Catalog) -> dict[str, Any]:
    return {section: section_offers(section, section_releases(catalog, section)) for section in SECTIONS}
