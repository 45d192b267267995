"""The demo shop's JavaScript section: pages that are empty until a script fills them in.

``/js/catalog?page=N`` and ``/js/release/SLUG`` are HTML shells; their script fetches the data
from ``/js/api/...`` (JSON) and builds the same markup as the plain HTML section (same classes,
so the ``demo_js`` profile uses the ``demo`` selectors). Text goes in with ``textContent``:
nothing from the data is parsed as HTML. Without a browser these pages hold no products.
"""

from __future__ import annotations

import json
from html import escape

from recordhound.demo import pages
from recordhound.demo.catalog import Catalog, Product
from recordhound.demo.site import Page

PREFIX = "/js"

_LISTING_SCRIPT = """
fetch("/js/api/catalog?page=" + new URLSearchParams(location.search).get("page"))
  .then(r => r.json()).then(data => {
    const list = document.createElement("ul");
    for (const p of data.products) {
      const a = document.createElement("a");
      a.className = "product-link"; a.href = p.path; a.textContent = p.title;
      const li = document.createElement("li"); li.appendChild(a); list.appendChild(li);
    }
    list.className = "products";
    const next = document.createElement("a");
    next.className = "next"; next.href = data.next; next.textContent = "Next";
    document.getElementById("app").append(list, next);
  });
"""

_PRODUCT_SCRIPT = """
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
fetch("/js/api" + location.pathname.slice(3) + ".json").then(r => r.json()).then(p => {
  const box = el("div", "product"); box.dataset.sku = p.sku;
  box.appendChild(el("h1", "title", p.title));
  const artists = el("div", "artists");
  if (p.joined) artists.appendChild(el("span", "joined", p.artists.join(" / ")));
  else p.artists.forEach(a => artists.appendChild(el("a", "artist", a)));
  box.appendChild(artists);
  const facts = el("p");
  facts.append("Label: ", el("span", "label", p.label), " · Cat. no. ", el("span", "catno", p.catno),
               " · Released ", el("span", "year", String(p.year)));
  box.appendChild(facts);
  const styles = el("ul", "styles");
  p.styles.forEach(s => styles.appendChild(el("li", null, s)));
  box.appendChild(styles);
  const offer = el("p", "offer");
  const stock = el("span", "stock", p.in_stock ? "In stock" : "Out of stock");
  stock.dataset.inStock = String(p.in_stock);
  offer.append("Price: ", el("span", "price", p.price), " ", stock);
  box.appendChild(offer);
  document.getElementById("app").appendChild(box);
});
"""


def build_js_site(catalog: Catalog) -> dict[str, Page]:
    site: dict[str, Page] = {}
    products = catalog.products
    total = max(1, -(-len(products) // pages.PAGE_SIZE))
    for page in range(1, total + 1):
        chunk = products[(page - 1) * pages.PAGE_SIZE: page * pages.PAGE_SIZE]
        site[f"{PREFIX}/catalog?page={page}"] = _shell(f"Page {page}", _LISTING_SCRIPT)
        site[f"{PREFIX}/api/catalog?page={page}"] = _json({
            "products": [{"title": p.title, "path": PREFIX + p.path} for p in chunk],
            "next": f"{PREFIX}/catalog?page={page + 1 if page < total else 1}",
        })
    for product in products:
        site[PREFIX + product.path] = _shell(product.title, _PRODUCT_SCRIPT)
        site[f"{PREFIX}/api{product.path}.json"] = _json(_product(catalog, product))
    return site


def _product(catalog: Catalog, product: Product) -> dict[str, object]:
    return {
        "sku": product.sku, "title": product.title, "artists": list(product.artists),
        "joined": product.artists_joined, "label": product.label, "catno": product.catno,
        "year": product.year, "styles": list(product.styles), "in_stock": product.in_stock,
        "price": pages.price_text(catalog.price(product), product.currency, product.price_format),
    }


def _shell(title: str, script: str) -> Page:
    html = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)} · '
            f'Demo Records (JS)</title></head>\n<body><div id="app"></div>\n<script>{script}</script>\n'
            f"</body></html>\n")
    return Page(200, "text/html; charset=utf-8", html.encode())


def _json(value: object) -> Page:
    return Page(200, "application/json", json.dumps(value, ensure_ascii=False).encode())
