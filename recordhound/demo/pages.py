"""HTML of the demo shop: listings, style indexes and product pages (all text escaped)."""

from __future__ import annotations

from decimal import Decimal
from html import escape

from recordhound.demo.catalog import Catalog, Product
from recordhound.demo.names import STYLES

PAGE_SIZE = 40
NOT_FOUND_PATH = "/release/gone"
REDIRECT_PATH = "/release/moved"
LOOP_PATHS = ("/release/loop-a", "/release/loop-b")  # each redirects to the other


def price_text(amount: Decimal | None, currency: str, fmt: str) -> str:
    """The price as this shop prints it ("€12,99", "$1,299.00", "1 299,00 ₽", "12.99 EUR")."""
    if amount is None:
        return "Price on request"
    dotted = f"{amount:,.2f}"  # 1,299.00
    comma = dotted.replace(",", " ").replace(".", ",")  # 1 299,00
    return {
        "eur_dotted": f"{comma.replace(' ', '.')} €",  # 1.299,00 €
        "gbp": f"£{dotted}",
        "eur_symbol": f"€{comma.replace(' ', '')}",
        "eur_code": f"{amount:.2f} EUR",
        "eur_suffix": f"{comma} €",
        "usd": f"${dotted}",
        "rub": f"{comma} ₽",
    }[fmt]


def _layout(title: str, body: str, charset: str = "utf-8") -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="{charset}">'
        f"<title>{escape(title)} · Demo Records</title></head>\n<body>\n"
        f'<nav><a href="/catalog?page=1">Catalog</a> <a href="/styles">Styles</a></nav>\n'
        f"{body}\n</body></html>\n"
    )


def _product_links(products: list[Product]) -> str:
    items = "".join(
        f'<li><a class="product-link" href="{escape(p.path)}">{escape(p.title or "(untitled)")}</a></li>\n'
        for p in products
    )
    return f'<ul class="products">\n{items}</ul>'


def listing_page(products: list[Product], page: int, pages: int, base: str, extra: str = "") -> str:
    """One page of a paginated listing; the last page links back to the first (a loop)."""
    following = page + 1 if page < pages else 1
    pager = f'<a class="next" href="{escape(base)}?page={following}">Next</a>'
    return _layout(f"Page {page}", f"<h1>Page {page} of {pages}</h1>\n{_product_links(products)}\n{extra}{pager}")


def styles_index() -> str:
    links = "".join(
        f'<li><a class="style-link" href="/style/{style_slug(g[0])}?page=1">{escape(g[0])}</a></li>\n'
        for g in STYLES
    )
    return _layout("Styles", f'<ul class="styles-index">\n{links}</ul>')


def style_slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")


def product_page(catalog: Catalog, product: Product, charset: str = "utf-8") -> str:
    amount = catalog.price(product)
    stock = "In stock" if product.in_stock else "Out of stock"
    sku = f' data-sku="{escape(product.sku)}"' if product.sku else ""  # no SKU: the URL identifies it
    body = (
        f'<div class="product"{sku}>\n'
        f'<h1 class="title">{escape(product.title)}</h1>\n'
        f"{_artists(product)}\n"
        f'<p>Label: <span class="label">{escape(product.label)}</span> · '
        f'Cat. no. <span class="catno">{escape(product.catno)}</span> · '
        f'Released <span class="year">{product.year}</span></p>\n'
        f'<ul class="styles">{"".join(f"<li>{escape(s)}</li>" for s in product.styles)}</ul>\n'
        f'<p class="offer">Price: <span class="price">{escape(price_text(amount, product.currency, product.price_format))}</span> '
        f'<span class="stock" data-in-stock="{str(product.in_stock).lower()}">{stock}</span></p>\n'
        f"</div>"
    )
    if product.fault == "broken_html":
        body = body.replace("</h1>", "").replace("</p>\n", "\n", 1) + "\n<div><table><tr><td>unclosed <b>markup"
    return _layout(product.title or "Untitled", body, charset)


def _artists(product: Product) -> str:
    if product.artists_joined:
        inner = f'<span class="joined">{escape(" / ".join(product.artists))}</span>'
    else:
        inner = " ".join(f'<a class="artist" href="/artist/{i}">{escape(s)}</a>'
                         for i, s in zip(product.artist_ids or (0,), product.artists))
    return f'<div class="artists">{inner}</div>'


def not_found_page() -> str:
    return _layout("Not found", "<h1>404 Not Found</h1>")
