"""``platform: shopify``: a Shopify store's products from its ``/products.json`` (pages of 30,
``?page=N`` until one comes back empty), one offer per variant (its format in the variant's
title, its own price, stock and barcode, under the variant's id: SKUs are optional in Shopify, and
stores leave them empty or print one on several variants), with no product page fetched.

With a ``sitemap:`` in the profile, the products come from the products sitemap instead, each read
from its ``/products/<handle>.json`` (one product, a few kilobytes): a recheck, or a ``lastmod`` that
moved, fetches that product's ``.json`` again, never the whole ``/products.json`` listing.

The JSON has no currency: the profile's ``price.default_currency`` says it (``profile draft``
reads it from a product page's ``og:price:currency``). The title usually holds the artists
(and often the catalogue number): the profile's ``title_rules`` split it; ``vendor`` is the label.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

from recordhound.items import RawOffer, RawRelease

PRODUCTS_JSON = "products.json"


def products_json_url(base_url: str, page: int) -> str:
    return urljoin(base_url, f"{PRODUCTS_JSON}?page={page}")


def product_json_url(page_url: str) -> str:
    """``/products/<handle>`` → ``/products/<handle>.json``: one product, its variants, no listing."""
    path = urlsplit(page_url)._replace(query="", fragment="").geturl().rstrip("/")
    return path if path.endswith(".json") else path + ".json"


def product_page_url(json_url: str) -> str:
    """The product page a ``.json`` URL describes (an offer's url is its page)."""
    return json_url.removesuffix(".json").removesuffix(".js")


def next_page(url: str) -> int:
    """The page after the one ``url`` asked for."""
    query = url.rsplit("?", 1)[1] if "?" in url else ""
    params = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
    return int(params.get("page", "1")) + 1 if params.get("page", "1").isdigit() else 2


def release_of(product: dict[str, Any], base_url: str, source: str) -> RawRelease:
    handle = str(product.get("handle") or product.get("id") or "")
    raw = RawRelease(source=source, url=urljoin(base_url, f"products/{handle}"),
                     external_id=str(product.get("id") or handle), title=_text(product.get("title")),
                     label=_text(product.get("vendor")))
    raw.structured = ["price"]  # Shopify prices are "24.99": "." is the decimal separator
    raw.offers = [_offer(variant) for variant in product.get("variants") or [] if isinstance(variant, dict)]
    return raw


def _offer(variant: dict[str, Any]) -> RawOffer:
    available = variant.get("available")
    return RawOffer(
        external_id=_text(variant.get("id")) or _text(variant.get("sku")),
        format=_text(variant.get("title")) or _text(variant.get("option1")),
        condition="new",
        price=_text(variant.get("price")),
        availability=None if available is None else ("in stock" if available else "sold out"),
        barcode=_text(variant.get("barcode")),
        machine_price=True,
    )


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)
