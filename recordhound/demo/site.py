"""Every URL of the demo shop, rendered once into bytes (the server only looks them up)."""

from __future__ import annotations

from dataclasses import dataclass

from recordhound.demo import pages
from recordhound.demo.catalog import BAD_BYTES_MARKER, Catalog, Product
from recordhound.demo.names import STYLES

NON_UTF8_CHARSET = "iso-8859-1"


@dataclass(frozen=True)
class Page:
    status: int
    content_type: str
    body: bytes
    location: str | None = None  # for redirects
    headers: tuple[tuple[str, str], ...] = ()  # more response headers


def _html(text: str, charset: str = "utf-8", status: int = 200) -> Page:
    return Page(status, f"text/html; charset={charset}", text.encode(charset, "xmlcharrefreplace"))


def build_site(catalog: Catalog) -> dict[str, Page]:
    site: dict[str, Page] = {"/": _html(pages.styles_index()), "/styles": _html(pages.styles_index())}
    site.update(_listing(catalog.products, "/catalog", first_page_extra=_fault_links(catalog)))
    for index, group in enumerate(STYLES):
        members = [p for p in catalog.products if index in p.style_ids]
        site.update(_listing(members, f"/style/{pages.style_slug(group[0])}"))
    # an old product URL that moved: the crawl meets it before or after its target
    site[pages.REDIRECT_PATH] = Page(301, "text/plain; charset=utf-8", b"moved\n", catalog.products[1].path)
    first, second = pages.LOOP_PATHS  # a redirect loop: recorded as failed, with the chain
    site[first] = Page(301, "text/plain; charset=utf-8", b"moved\n", second)
    site[second] = Page(301, "text/plain; charset=utf-8", b"moved\n", first)
    for product in [*catalog.products, catalog.rejected, *catalog.unstorable]:
        charset = NON_UTF8_CHARSET if product.fault == "non_utf8" else "utf-8"
        site[product.path] = _html(pages.product_page(catalog, product, charset), charset)
    bad = site["/release/bad-bytes"]
    site["/release/bad-bytes"] = Page(bad.status, bad.content_type, bad.body.replace(BAD_BYTES_MARKER.encode(), b"\xff\xfe"))
    return site


def _fault_links(catalog: Catalog) -> str:
    """Links only the first catalog page carries: a dead link, a moved one, an untitled product."""
    return (
        f'<p class="more"><a class="product-link" href="{pages.NOT_FOUND_PATH}">Old release</a> '
        f'<a class="product-link" href="{pages.REDIRECT_PATH}">Moved release</a> '
        f'<a class="product-link" href="{pages.LOOP_PATHS[0]}">Going round</a> '
        f'<a class="product-link" href="{catalog.rejected.path}">Mystery item</a> '
        + "".join(f'<a class="product-link" href="{p.path}">Odd item</a> ' for p in catalog.unstorable)
        + "</p>\n"
    )


def _listing(products: list[Product], base: str, first_page_extra: str = "") -> dict[str, Page]:
    total = max(1, -(-len(products) // pages.PAGE_SIZE))
    out = {}
    for page in range(1, total + 1):
        chunk = products[(page - 1) * pages.PAGE_SIZE: page * pages.PAGE_SIZE]
        extra = first_page_extra if page == 1 else ""
        out[f"{base}?page={page}"] = _html(pages.listing_page(chunk, page, total, base, extra))
    return out


def not_found() -> Page:
    return _html(pages.not_found_page(), status=404)
