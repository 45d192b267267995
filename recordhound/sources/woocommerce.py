"""``platform: woocommerce``: a WooCommerce shop's products from its public Store API
(``<base_url>wp-json/wc/store/v1/products?page=N&per_page=100``, pages until one comes back
short), one offer per product, with no product page fetched.

A product's ``prices.price`` is in minor units (``"1999"`` with ``currency_minor_unit: 2`` is
19.99 in ``currency_code``); ``is_in_stock`` / ``is_on_backorder`` say its availability; its
``attributes`` (``[{name: "Label", terms: [{name: ...}]}]``) are read as a spec table's rows are
(Artist, Label, Cat. No., Year, Genre, Format, EAN, in a few languages); a Cat. No. with several
terms is a release with several catalogue numbers. The name usually holds the
artists too: the profile's ``title_rules`` split it.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

from recordhound.items import RawOffer, RawRelease
from recordhound.sources.draft_shops import SPEC_ROWS
from recordhound.text import fold

STORE_API = "wp-json/wc/store/v1/products"
PER_PAGE = 100  # the Store API's largest page


def store_api_url(base_url: str, page: int, per_page: int = PER_PAGE) -> str:
    return urljoin(base_url, f"{STORE_API}?page={page}&per_page={per_page}")


def next_page(url: str, products: int) -> int | None:
    """The page after the one ``url`` asked for, or None when this one was the last (short)."""
    query = parse_qs(urlsplit(url).query)
    page, per_page = query.get("page", ["1"])[0], query.get("per_page", [str(PER_PAGE)])[0]
    if not (page.isdigit() and per_page.isdigit()) or products < int(per_page):
        return None
    return int(page) + 1


def release_of(product: dict[str, Any], base_url: str, source: str) -> RawRelease:
    fields = attributes(product)
    url = _text(product.get("permalink")) or urljoin(base_url, f"?p={product.get('id')}")
    raw = RawRelease(source=source, url=url, external_id=_text(product.get("id")), title=_text(product.get("name")),
                     artists=fields.get("artists", []), label=_first(fields, "label"),
                     catalog_number=" / ".join(fields.get("catalog_number", [])) or None, year=_first(fields, "year"),
                     styles=fields.get("styles", []), barcode=_first(fields, "barcode"),
                     country=_first(fields, "country"))
    raw.structured = ["price"]
    raw.offers = [RawOffer(
        external_id=_text(product.get("sku")) or _text(product.get("id")), format=_first(fields, "format"),
        condition="new", price=_price(product.get("prices")), currency=_currency(product.get("prices")),
        availability=_availability(product), barcode=_first(fields, "barcode"), machine_price=True)]
    return raw


def attributes(product: dict[str, Any]) -> dict[str, list[str]]:
    """The product's attributes by field name (``"Cat. No."`` → ``catalog_number``)."""
    found: dict[str, list[str]] = {}
    for attribute in product.get("attributes") or []:
        if not isinstance(attribute, dict):
            continue
        name = fold(str(attribute.get("name") or ""))
        field = next((f for f, words in SPEC_ROWS.items() if name in words), None)
        terms = [str(t["name"]).strip() for t in attribute.get("terms") or [] if isinstance(t, dict) and t.get("name")]
        if field is not None and terms and field not in found:
            found[field] = terms
    return found


def _price(prices: Any) -> str | None:
    if not isinstance(prices, dict) or _text(prices.get("price")) is None:
        return None
    try:
        minor = int(prices.get("currency_minor_unit", 2))
        return str(Decimal(str(prices["price"])).scaleb(-minor))
    except (InvalidOperation, ValueError, TypeError):
        return None


def _currency(prices: Any) -> str | None:
    return _text(prices.get("currency_code")) if isinstance(prices, dict) else None


def _availability(product: dict[str, Any]) -> str | None:
    if product.get("is_on_backorder"):
        return "pre-order"
    stock = product.get("is_in_stock")
    return None if stock is None else ("in stock" if stock else "sold out")


def _first(fields: dict[str, list[str]], name: str) -> str | None:
    return fields[name][0] if fields.get(name) else None


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
