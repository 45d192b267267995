"""The pages of the platform-like sections (``demo/shops.py``), written for recordhound: markup
shaped as these platforms publish it, no copied pages."""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape
from typing import Any

from recordhound.demo.shops import CURRENCY, SECTIONS, ShopOffer, ShopRelease, section_releases
from recordhound.demo.catalog import Catalog
from recordhound.demo.site import Page

SCHEMA = "https://schema.org/"
PAGE_SIZES = {"shopify": 20, "woo": 12, "market": 10}
SHOPIFY_JSON_LIMIT = 30  # products per /products.json page (Shopify's default)
AVAILABILITY = {"in_stock": "InStock", "sold_out": "OutOfStock", "pre_order": "PreOrder"}
GERMAN_STOCK = {"in_stock": "auf Lager", "sold_out": "ausverkauft", "pre_order": "vorbestellbar"}
WP_API_LINK = '<link rel="https://api.w.org/" href="/woo/wp-json/">'  # WordPress names its REST root
RESERVED_PATH = "/market/release/reserved-copy"  # disallowed by robots.txt, linked from the market


def html(title: str, body: str, head: str = "", body_class: str = "") -> Page:
    text = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title>{head}</head>\n'
            f'<body class="{body_class}">\n{body}\n</body></html>\n')
    return Page(200, "text/html; charset=utf-8", text.encode())


def json_page(value: Any) -> Page:
    return Page(200, "application/json; charset=utf-8", json.dumps(value).encode())


def ld(value: Any) -> str:
    text = json.dumps(value).replace("</", "<\\/")
    return f'<script type="application/ld+json">{text}</script>'


def _offer_ld(offer: ShopOffer, currency: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"@type": "Offer", "price": str(offer.price()), "priceCurrency": currency,
            "availability": SCHEMA + AVAILABILITY[offer.availability], "url": url, **extra}


# -- Shopify-like --------------------------------------------------------------------------------

def shopify_site(releases: list[ShopRelease]) -> dict[str, Page]:
    site = _paged("shopify", releases, lambda page: f"/shopify/collections/all?page={page}",
                  _shopify_listing, first="/shopify/collections/all")
    chunks = [releases[i:i + SHOPIFY_JSON_LIMIT] for i in range(0, len(releases), SHOPIFY_JSON_LIMIT)] + [[]]
    for page, chunk in enumerate(chunks, 1):
        site[f"/shopify/products.json?page={page}"] = json_page({"products": [_shopify_json(r) for r in chunk]})
    site["/shopify/products.json"] = site["/shopify/products.json?page=1"]
    for release in releases:
        site[release.path] = html(f"{release.artist} - {release.title}", _shopify_product(release),
                                  head=_shopify_head(release))
        site[release.path + ".json"] = json_page({"product": _shopify_json(release)})
        site[release.path + ".js"] = json_page(_shopify_json(release))
    return site


def shopify_title(release: ShopRelease) -> str:
    return f"{release.artist} - {release.title} [{release.catno}]"


def _shopify_json(release: ShopRelease) -> dict[str, Any]:
    return {"id": 7_000_000 + int(release.key.rsplit("-", 1)[1]), "title": shopify_title(release),
            "handle": release.key, "vendor": release.label, "product_type": "Vinyl", "tags": ["new-arrivals"],
            "variants": [{"id": int(o.key), "title": o.label, "option1": o.label,
                          "sku": o.sku, "price": str(o.price()), "available": o.availability == "in_stock",
                          "barcode": o.barcode, "requires_shipping": True} for o in release.offers]}


def _shopify_head(release: ShopRelease) -> str:
    first = release.offers[0]
    return ('<script src="https://cdn.shopify.com/s/trekkie.storefront.js" defer></script>'
            f'<meta property="og:type" content="product"><meta property="og:title" content="{escape(shopify_title(release))}">'
            f'<meta property="og:price:amount" content="{first.price()}">'
            f'<meta property="og:price:currency" content="{CURRENCY["shopify"]}">')


def _shopify_product(release: ShopRelease) -> str:
    url = release.path
    data = {"@context": "https://schema.org", "@type": "Product", "name": shopify_title(release),
            "brand": {"@type": "Brand", "name": release.label}, "url": url,
            "offers": [_offer_ld(o, CURRENCY["shopify"], f"{url}?variant={o.key}", name=o.label, gtin13=o.barcode,
                                 itemCondition=SCHEMA + "NewCondition", **({"sku": o.sku} if o.sku else {}))
                       for o in release.offers]}
    options = "".join(f'<option value="{o.key}">{escape(o.label)} - €{o.price()}</option>'
                      for o in release.offers)
    return (f'{ld(data)}\n<main><h1 class="product__title">{escape(shopify_title(release))}</h1>'
            f'<select name="id">{options}</select></main>\n<script>window.Shopify = {{"shop": "demo"}};</script>')


def _shopify_listing(chunk: list[ShopRelease], page: int, total: int) -> Page:
    items = "".join(f'<li class="grid__item"><a class="full-unstyled-link" href="{r.path}">'
                    f'{escape(shopify_title(r))}</a></li>\n' for r in chunk)
    nav = (f'<a class="pagination__item--prev" href="/shopify/collections/all?page={page - 1}">Previous</a>'
           if page > 1 else "")
    nav += (f'<a class="pagination__item--next" href="/shopify/collections/all?page={page + 1}">Next</a>'
            if page < total else "")
    return html("All products", f'<ul class="product-grid">\n{items}</ul><nav class="pagination">{nav}</nav>'
                '<script>window.Shopify = {"shop": "demo"};</script>',
                head='<script src="https://cdn.shopify.com/s/trekkie.storefront.js" defer></script>')


# -- WooCommerce-like ----------------------------------------------------------------------------

def woo_site(releases: list[ShopRelease]) -> dict[str, Page]:
    site = _paged("woo", releases, lambda page: f"/woo/shop/page/{page}/", _woo_listing, first="/woo/shop/")
    for release in releases:
        site[release.path] = html(release.title, _woo_product(release), head=WP_API_LINK,
                                  body_class="product woocommerce")
    return site


def _woo_listing(chunk: list[ShopRelease], page: int, total: int) -> Page:
    items = "".join(f'<li class="product"><a href="{r.path}" class="woocommerce-LoopProduct-link">'
                    f'<h2 class="woocommerce-loop-product__title">{escape(r.artist)} – {escape(r.title)}</h2></a>'
                    f'<a href="?add-to-cart={r.offers[0].sku}" class="button add_to_cart_button">Add to cart</a></li>\n'
                    for r in chunk)
    nav = "".join(f'<li><a class="page-numbers" href="/woo/shop/page/{n}/">{n}</a></li>' if n != page else
                  f'<li><span aria-current="page" class="page-numbers current">{n}</span></li>'
                  for n in range(1, total + 1))
    if page < total:
        nav += f'<li><a class="next page-numbers" href="/woo/shop/page/{page + 1}/">→</a></li>'
    return html("Shop", f'<ul class="products columns-4">\n{items}</ul>'
                f'<nav class="woocommerce-pagination"><ul class="page-numbers">{nav}</ul></nav>', head=WP_API_LINK,
                body_class="archive post-type-archive woocommerce woocommerce-page")


def _woo_product(release: ShopRelease) -> str:
    offer = release.offers[0]
    name = f"{release.artist} – {release.title}"
    data = {"@context": "https://schema.org/", "@type": "Product", "@id": f"{release.path}#product", "name": name,
            "url": release.path, "sku": offer.sku,
            "offers": [_offer_ld(offer, CURRENCY["woo"], release.path, itemCondition=SCHEMA + "NewCondition",
                                 priceSpecification={
                "price": str(offer.price()), "priceCurrency": CURRENCY["woo"], "valueAddedTaxIncluded": "true"})]}
    rows = [("Artist", release.artist), ("Label", release.label), ("Cat. No.", release.catno),
            ("Format", offer.label), ("Year", str(release.year)), ("EAN", offer.barcode or "")]
    genres = ", ".join(f'<a href="/woo/genre/{escape(g.lower())}/" rel="tag">{escape(g)}</a>' for g in release.styles)
    cells = [(escape(k), escape(v)) for k, v in rows] + [("Genre", genres)]
    table = "".join(f'<tr class="woocommerce-product-attributes-item"><th class="woocommerce-product-attributes-item__label">'
                    f'{k}</th><td class="woocommerce-product-attributes-item__value"><p>{v}</p></td></tr>'
                    for k, v in cells)
    return (f'{ld(data)}\n<div class="product"><h1 class="product_title entry-title">{escape(name)}</h1>'
            f'<p class="price"><span class="woocommerce-Price-amount amount">{offer.price()}&nbsp;€</span></p>'
            f'<table class="woocommerce-product-attributes shop_attributes">{table}</table></div>')


# -- Bandcamp-like -------------------------------------------------------------------------------

def bandcamp_site(releases: list[ShopRelease]) -> dict[str, Page]:
    items = "".join(f'<li class="music-grid-item"><a href="{r.path}"><p class="title">{escape(bandcamp_title(r))}</p>'
                    f'</a></li>\n' for r in releases)
    site = {"/bandcamp/music": html("Music | Demo Label", f'<ol id="music-grid">\n{items}</ol>',
                                    head='<meta name="generator" content="Bandcamp">')}
    for release in releases:
        site[release.path] = html(bandcamp_title(release), _bandcamp_album(release),
                                  head='<meta name="generator" content="Bandcamp">')
    return site


def bandcamp_title(release: ShopRelease) -> str:
    return f"{release.catno} // {release.artist} - {release.title}"


def _bandcamp_album(release: ShopRelease) -> str:
    formats = {"Digital": "DigitalFormat", "Cassette": "CassetteFormat", "CD": "CDFormat"}
    albums = [{"@type": ["MusicRelease", "Product"], "@id": f"{release.path}#{o.sku}", "name": o.label,
               "musicReleaseFormat": formats.get(o.format, "VinylFormat"),
               **({"gtin13": o.barcode} if o.barcode else {}),
               "offers": _offer_ld(o, CURRENCY["bandcamp"], release.path, sku=o.sku,
                                   itemCondition=SCHEMA + "NewCondition")} for o in release.offers]
    data = {"@context": "https://schema.org", "@type": "MusicAlbum", "@id": release.path,
            "name": bandcamp_title(release), "byArtist": {"@type": "MusicGroup", "name": release.artist},
            "publisher": {"@type": "MusicGroup", "name": release.label}, "datePublished": f"01 Jan {release.year} 00:00:00 GMT",
            "genre": list(release.styles), "albumRelease": albums}
    buy = "".join(f'<li class="buyItem"><h3>{escape(o.label)}</h3><span class="base-text-color">€{o.price()}</span></li>'
                  for o in release.offers)
    return f'{ld(data)}\n<div id="name-section"><h2 class="trackTitle">{escape(bandcamp_title(release))}</h2></div><ul>{buy}</ul>'


# -- marketplace ---------------------------------------------------------------------------------

def market_site(releases: list[ShopRelease], reserved: ShopRelease) -> dict[str, Page]:
    site = _paged("market", releases, lambda page: f"/market/browse/page-{page}.html", _market_listing,
                  first="/market/browse/")
    for release in releases:
        site[release.path] = html(release.title, _market_release(release))
    site[RESERVED_PATH] = html(reserved.title, _market_release(reserved))
    return site


def _market_listing(chunk: list[ShopRelease], page: int, total: int) -> Page:
    items = "".join(f'<div class="card"><a href="{r.path}">{escape(r.artist)}: {escape(r.title)}</a></div>\n'
                    for r in chunk)
    if page == 1:
        items += f'<div class="card"><a href="{RESERVED_PATH}">Reserviert</a></div>\n'
    head = f'<link rel="next" href="page-{page + 1}.html">' if page < total else ""
    more = f'<p><a href="page-{page + 1}.html">mehr</a></p>' if page < total else ""
    return html(f"Stöbern – Seite {page}", f"<h1>Stöbern</h1>\n{items}{more}", head=head)


def _market_release(release: ShopRelease) -> str:
    def copy(o: ShopOffer) -> dict[str, Any]:
        grades = [{"@type": "PropertyValue", "name": "Media condition", "value": o.media_grade},
                  {"@type": "PropertyValue", "name": "Sleeve condition", "value": o.sleeve_grade}]
        return _offer_ld(o, CURRENCY["market"], release.path, sku=o.sku,
                         itemCondition=SCHEMA + ("UsedCondition" if o.condition == "used" else "NewCondition"),
                         **({"additionalProperty": grades} if o.media_grade else {}))
    prices = [o.price() for o in release.offers]
    data = {"@context": "https://schema.org", "@type": ["Product", "MusicRelease"], "name": release.title,
            "byArtist": {"@type": "MusicGroup", "name": release.artist}, "recordLabel": {"name": release.label},
            "catalogNumber": release.catno, "datePublished": str(release.year), "genre": list(release.styles),
            "musicReleaseFormat": SCHEMA + "VinylFormat",
            "offers": {"@type": "AggregateOffer", "lowPrice": str(min(prices)), "highPrice": str(max(prices)),
                       "priceCurrency": CURRENCY["market"], "offerCount": len(prices),
                       "offers": [copy(o) for o in release.offers]}}
    rows = "".join(f"<tr><td>{escape(o.media_grade or 'neu')}</td><td>{escape(o.sleeve_grade or '')}</td>"
                   f"<td>£{o.price()}</td><td>{GERMAN_STOCK[o.availability]}</td></tr>" for o in release.offers)
    return f"{ld(data)}\n<h1>{escape(release.artist)} – {escape(release.title)}</h1><table>{rows}</table>"


# -- shared --------------------------------------------------------------------------------------

def _paged(section: str, releases: list[ShopRelease], path: Callable[[int], str],
           render: Callable[[list[ShopRelease], int, int], Page], first: str) -> dict[str, Page]:
    size = PAGE_SIZES[section]
    total = max(1, -(-len(releases) // size))
    site = {path(page): render(releases[(page - 1) * size: page * size], page, total) for page in range(1, total + 1)}
    site[first] = site[path(1)]
    return site


def build_shop_sections(catalog: Catalog) -> dict[str, Page]:
    releases = {section: section_releases(catalog, section) for section in SECTIONS}
    site = {**shopify_site(releases["shopify"]), **woo_site(releases["woo"]), **bandcamp_site(releases["bandcamp"])}
    others = releases["woo"] or releases["market"]
    if others:  # any release: robots.txt disallows the page, so it must never be fetched
        site.update(market_site(releases["market"], others[0]))
    return site
