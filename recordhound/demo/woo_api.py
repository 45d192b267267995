"""The WooCommerce-like section's Store API (``/woo/wp-json/wc/store/v1/products``), written for
recordhound in the shape WooCommerce's public Store API answers in: one JSON object per product
(``id``, ``name``, ``permalink``, ``sku``, ``prices`` in minor units with ``currency_code`` and
``currency_minor_unit``, ``is_in_stock``, ``is_on_backorder``, ``attributes`` with their ``terms``),
``?page=N&per_page=M`` (at most 100), ``X-WP-Total`` / ``X-WP-TotalPages`` headers, an empty list
past the last page. A closed shop (``demo-shop --woo-store-api closed``) answers 401, as a shop
whose security plugin locks the REST API does.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from recordhound.demo.catalog import slug
from recordhound.demo.shops import CURRENCY, ShopRelease, catalog_numbers
from recordhound.demo.site import Page

API_PATH = "/woo/wp-json/wc/store/v1/products"
DEFAULT_PER_PAGE = 10
MAX_PER_PAGE = 100


def store_api(releases: list[ShopRelease], target: str, origin: str, open_api: bool) -> Page | None:
    """The answer to ``target`` when it is a Store API products request, else None."""
    parts = urlsplit(target)
    if parts.path.rstrip("/") != API_PATH:
        return None
    if not open_api:
        return _json(401, {"code": "rest_not_logged_in", "message": "The REST API is closed to visitors of this "
                                                                     "demo shop.", "data": {"status": 401}})
    query = parse_qs(parts.query)
    try:
        page = int(query.get("page", ["1"])[0])
        per_page = int(query.get("per_page", [str(DEFAULT_PER_PAGE)])[0])
    except ValueError:
        return _json(400, {"code": "rest_invalid_param", "message": "page and per_page are numbers",
                           "data": {"status": 400}})
    if page < 1 or not 1 <= per_page <= MAX_PER_PAGE:
        return _json(400, {"code": "rest_invalid_param", "message": f"page >= 1, 1 <= per_page <= {MAX_PER_PAGE}",
                           "data": {"status": 400}})
    chunk = releases[(page - 1) * per_page: page * per_page]
    total_pages = -(-len(releases) // per_page)
    return _json(200, [_product(r, origin) for r in chunk],
                 (("X-WP-Total", str(len(releases))), ("X-WP-TotalPages", str(total_pages))))


def _json(status: int, value: Any, headers: tuple[tuple[str, str], ...] = ()) -> Page:
    return Page(status, "application/json; charset=UTF-8", json.dumps(value).encode(), headers=headers)


def _product(release: ShopRelease, origin: str) -> dict[str, Any]:
    offer = release.offers[0]
    cents = str(round(offer.price() * 100))
    attributes = [("Artist", [release.artist]), ("Label", [release.label]), ("Cat. No.", catalog_numbers(release)),
                  ("Format", [offer.label]), ("Year", [str(release.year)] if release.year else []),
                  ("Genre", list(release.styles)), ("EAN", [offer.barcode] if offer.barcode else [])]
    return {
        "id": 4000 + int(release.key.rsplit("-", 1)[1]), "name": f"{release.artist} – {release.title}",
        "slug": release.key, "type": "simple", "permalink": origin.rstrip("/") + release.path, "sku": offer.sku,
        "prices": {"price": cents, "regular_price": cents, "sale_price": cents, "currency_code": CURRENCY["woo"],
                   "currency_symbol": "€", "currency_minor_unit": 2, "currency_decimal_separator": ",",
                   "currency_thousand_separator": "."},
        "is_in_stock": offer.availability != "sold_out", "is_on_backorder": offer.availability == "pre_order",
        "is_purchasable": True,
        "attributes": [{"id": n + 1, "name": name, "taxonomy": None, "has_variations": False,
                        "terms": [{"id": 0, "name": term, "slug": slug(term)} for term in terms]}
                       for n, (name, terms) in enumerate(attributes) if terms],
    }
