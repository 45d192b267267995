"""The demo shop's structured-data section: product pages whose data is only in their markup.

``/ld/catalog?page=N`` lists ``/ld/release/…`` pages. Their visible HTML has a title, the artists
and a price as text ("1.234,56 €" or "£1,234.56", mixed currencies), no classes a profile could
use; the fields are in schema.org JSON-LD (three shapes: a MusicAlbum, a Product/MusicRelease in
an ``@graph`` with a list of offers and a price as a string, a MusicRelease with ``releaseOf``)
or, on every tenth page, in microdata. Names are the canonical spellings, so a trusted crawl
of the section stores exactly ``sections.ld`` of ``/_truth.json``.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from html import escape
from typing import Any

from recordhound.demo import pages
from recordhound.demo.catalog import Catalog, Product, slug
from recordhound.demo.site import Page

PREFIX = "/ld"
RELEASES = 60  # at most; fewer when the shop is smaller
PAGE_SIZE = 20
MICRODATA_EVERY = 10
FORMATS = (("EUR", "eur_dotted"), ("GBP", "gbp"))
SCHEMA = "https://schema.org"


def ld_products(catalog: Catalog) -> list[Product]:
    rng = random.Random(f"recordhound-ld:{catalog.seed}")
    chosen = [p for p in catalog.products if p.fault is None and not p.sku.endswith("-U")][:RELEASES]
    products = []
    for index, product in enumerate(chosen):
        currency, price_format = rng.choice(FORMATS)
        cents = rng.randint(1000, 2500) * 100 + rng.randint(1, 99) if index % 7 == 3 else rng.randint(499, 5999)
        products.append(replace(
            product, sku=f"LD-{product.release:06d}", path=f"{PREFIX}/release/{product.release:06d}-{slug(product.title)}",
            artists=tuple(catalog.artist_names[i] for i in product.artist_ids), artists_joined=False,
            styles=tuple(catalog.style_names[i] for i in product.style_ids),
            currency=currency, price_format=price_format, base_cents=cents))
    return products


def build_ld_site(catalog: Catalog) -> dict[str, Page]:
    products = ld_products(catalog)
    total = max(1, -(-len(products) // PAGE_SIZE))
    site = {}
    for page in range(1, total + 1):
        chunk = products[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        site[f"{PREFIX}/catalog?page={page}"] = _html(f"Page {page}", _listing(chunk, page, total))
    for index, product in enumerate(products):
        body = _microdata(catalog, product) if index % MICRODATA_EVERY == MICRODATA_EVERY - 1 else _jsonld(catalog, product, index)
        site[product.path] = _html(product.title, body)
    return site


def _listing(products: list[Product], page: int, total: int) -> str:
    items = "".join(f'<li><a href="{escape(p.path)}">{escape(p.title)}</a></li>\n' for p in products)
    pager = "".join((
        f'<a rel="prev" href="{PREFIX}/catalog?page={page - 1}">‹ Previous</a> ' if page > 1 else "",
        f'<a rel="next" href="{PREFIX}/catalog?page={page + 1}">Next ›</a>' if page < total else "",
    ))
    return (f'<header><a href="/">Home</a></header>\n<main><h2>New arrivals, page {page}</h2>\n'
            f"<ul>\n{items}</ul>\n<nav>{pager}</nav></main>")


def _visible(catalog: Catalog, product: Product) -> str:
    price = pages.price_text(catalog.price(product), product.currency, product.price_format)
    return (f"<h2>{escape(product.title)}</h2>\n<p>by {escape(', '.join(product.artists))}</p>\n"
            f'<p class="price">{escape(price)}</p>')


def _availability(product: Product) -> str:
    return f"{SCHEMA}/{'InStock' if product.in_stock else 'OutOfStock'}"


def _artists(product: Product) -> Any:
    groups = [{"@type": "MusicGroup", "name": name} for name in product.artists]
    return groups[0] if len(groups) == 1 else groups


def _jsonld(catalog: Catalog, product: Product, index: int) -> str:
    price = catalog.price(product)
    offer = {"@type": "Offer", "priceCurrency": product.currency, "availability": _availability(product),
             "url": product.path}
    label = {"@type": "Organization", "name": product.label}
    genre: Any = list(product.styles) if len(product.styles) > 1 else product.styles[0]
    shape = index % 3
    if shape == 0:
        data: dict[str, Any] = {
            "@context": SCHEMA, "@type": "MusicAlbum", "name": product.title, "sku": product.sku,
            "byArtist": _artists(product), "recordLabel": label, "catalogNumber": product.catno,
            "genre": genre, "datePublished": str(product.year), "offers": {**offer, "price": float(price or 0)}}
    elif shape == 1:
        data = {"@context": SCHEMA, "@graph": [
            {"@type": "WebPage", "name": f"{product.title} · Demo Records", "url": product.path},
            {"@type": ["Product", "MusicRelease"], "name": product.title, "sku": product.sku,
             "byArtist": _artists(product), "brand": label, "catalogNumber": product.catno, "genre": genre,
             "datePublished": f"{product.year}-03-14", "offers": [{**offer, "price": f"{price}"}]}]}
    else:
        data = {"@context": SCHEMA, "@type": "MusicRelease", "name": product.title, "sku": product.sku,
                "catalogNumber": product.catno, "recordLabel": label,
                "releaseOf": {"@type": "MusicAlbum", "name": product.title, "byArtist": _artists(product),
                              "genre": genre, "datePublished": str(product.year)},
                "offers": {**offer, "price": str(price)}}
    text = json.dumps(data, ensure_ascii=False, indent=2 if shape == 1 else None).replace("</", "<\\/")
    return f'<script type="application/ld+json">{text}</script>\n<main>{_visible(catalog, product)}</main>'


def _microdata(catalog: Catalog, product: Product) -> str:
    price = catalog.price(product)
    shown = pages.price_text(price, product.currency, product.price_format)
    artists = ", ".join(
        f'<span itemprop="byArtist" itemscope itemtype="{SCHEMA}/MusicGroup"><span itemprop="name">{escape(a)}</span></span>'
        for a in product.artists)
    genres = "".join(f'<li itemprop="genre">{escape(s)}</li>' for s in product.styles)
    return (
        f'<main itemscope itemtype="{SCHEMA}/MusicAlbum">\n<h2 itemprop="name">{escape(product.title)}</h2>\n'
        f'<meta itemprop="sku" content="{escape(product.sku)}">\n<p>by {artists}</p>\n'
        f'<p><span itemprop="recordLabel" itemscope itemtype="{SCHEMA}/Organization"><span itemprop="name">'
        f'{escape(product.label)}</span></span> <span itemprop="catalogNumber">{escape(product.catno)}</span> '
        f'<time itemprop="datePublished" datetime="{product.year}">{product.year}</time></p>\n<ul>{genres}</ul>\n'
        f'<div itemprop="offers" itemscope itemtype="{SCHEMA}/Offer"><meta itemprop="priceCurrency" '
        f'content="{product.currency}"><p class="price" itemprop="price" content="{price}">{escape(shown)}</p>'
        f'<link itemprop="availability" href="{_availability(product)}"></div>\n</main>')


def _html(title: str, body: str) -> Page:
    text = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)} · '
            f"Demo Records</title></head>\n<body>\n{body}\n</body></html>\n")
    return Page(200, "text/html; charset=utf-8", text.encode())
