"""The demo shop's robots.txt and the Shopify-like section's sitemaps.

``/robots.txt`` disallows the market's reserved copy and the store's checkout, names the sitemap
index, and with ``crawl_delay`` says ``Crawl-delay``. ``/shopify/sitemap.xml`` is an index of
``sitemap_products_1.xml`` (every product page, ``lastmod`` = when its page last changed, so it
moves with the price epoch) and ``sitemap_collections_1.xml.gz`` (gzipped, collection pages only).
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from html import escape

from recordhound.demo.site import Page

DISALLOWED = ("/market/release/reserved", "/shopify/checkout")
INDEX_PATH = "/shopify/sitemap.xml"
PRODUCTS_PATH = "/shopify/sitemap_products_1.xml"
COLLECTIONS_PATH = "/shopify/sitemap_collections_1.xml.gz"
_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def robots_txt(origin: str, crawl_delay: float) -> Page:
    lines = ["User-agent: *", *(f"Disallow: {path}" for path in DISALLOWED)]
    if crawl_delay:
        lines.append(f"Crawl-delay: {crawl_delay:g}")
    lines += ["", f"Sitemap: {origin.rstrip('/')}{INDEX_PATH}", ""]
    return Page(200, "text/plain; charset=utf-8", "\n".join(lines).encode())


def _when(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


def sitemap_index(origin: str, changed: float) -> Page:
    entries = "".join(f"<sitemap><loc>{escape(origin.rstrip('/') + path)}</loc><lastmod>{_when(changed)}</lastmod></sitemap>"
                      for path in (PRODUCTS_PATH, COLLECTIONS_PATH))
    return _xml(f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {_NS}>{entries}</sitemapindex>\n')


def products_sitemap(origin: str, pages: dict[str, float]) -> Page:
    """``pages``: product path → when its page last changed."""
    entries = "".join(f"<url><loc>{escape(origin.rstrip('/') + path)}</loc><lastmod>{_when(moment)}</lastmod>"
                      "<changefreq>daily</changefreq></url>" for path, moment in pages.items())
    return _xml(f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {_NS}>{entries}</urlset>\n')


def collections_sitemap(origin: str) -> Page:
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {_NS}><url><loc>'
            f"{escape(origin.rstrip('/'))}/shopify/collections/all</loc></url></urlset>\n")
    return Page(200, "application/x-gzip", gzip.compress(body.encode(), mtime=0))


def _xml(text: str) -> Page:
    return Page(200, "application/xml; charset=utf-8", text.encode())
