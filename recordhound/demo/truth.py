"""The demo shop's ground truth: what a correct crawl of (seed, releases, epoch) stores."""

from __future__ import annotations

from typing import Any

from recordhound.demo import pages
from recordhound.demo.ldsite import ld_products
from recordhound.demo.second import second_truth
from recordhound.demo.shops import sections_truth
from recordhound.demo.catalog import Catalog, Product


def _offer(catalog: Catalog, product: Product) -> dict[str, Any]:
    price = catalog.price(product)
    return {
        "external_id": product.sku,
        "path": product.path,
        "title": product.title,
        "artists": [catalog.artist_names[i] for i in product.artist_ids],
        "label": product.label,
        "catalog_number": product.catno,
        "year": product.year,
        "styles": [catalog.style_names[i] for i in product.style_ids],
        "price": None if price is None else str(price),
        "currency": None if price is None else product.currency,
        "in_stock": product.in_stock,
    }


def changed_offers(catalog: Catalog) -> list[dict[str, Any]]:
    """Offers whose price at this epoch differs from the previous epoch's."""
    if catalog.epoch == 0:
        return []
    changed = []
    for product in catalog.products:
        old, new = catalog.price(product, catalog.epoch - 1), catalog.price(product)
        if old != new and old is not None and new is not None:
            changed.append({
                "external_id": product.sku,
                "old_price": str(old),
                "new_price": str(new),
                "change_percent": float(round((new - old) / old * 100, 2)),
            })
    return changed


def _counts(catalog: Catalog, stored: list[Product]) -> dict[str, int]:
    return {
        "releases": len({p.release for p in stored}),
        "offers": len(stored),
        "artists": len({i for p in stored for i in p.artist_ids}),
        "labels": len({p.label_id for p in stored}),
        "styles": len({i for p in stored for i in p.style_ids}),
        "offers_without_price": sum(1 for p in stored if catalog.price(p) is None),
    }


def section_truth(catalog: Catalog, products: list[Product]) -> dict[str, Any]:
    """A section crawled on its own (a source of its own, into a database of its own)."""
    return {"counts": {**_counts(catalog, products), "rejected": 0, "invalid": 0}, "faults": {},
            "offers": [_offer(catalog, p) for p in products]}


def build_truth(catalog: Catalog) -> dict[str, Any]:
    stored = catalog.products
    faults = {p.fault: p.path for p in stored if p.fault}
    faults.update({
        "not_found": pages.NOT_FOUND_PATH,
        "redirect": pages.REDIRECT_PATH,
        "redirect_loop": pages.LOOP_PATHS[0],
        "rejected": catalog.rejected.path,
        "pagination_loop": "/catalog?page=1",
        **{p.fault: p.path for p in catalog.unstorable if p.fault},
    })
    return {
        "seed": catalog.seed,
        "epoch": catalog.epoch,
        "releases": catalog.releases,
        "counts": {
            **_counts(catalog, stored),
            "rejected": 1,
            "invalid": len(catalog.unstorable),  # too long for a column, or bytes that are not UTF-8: rejected
        },
        "faults": faults,
        "offers": [_offer(catalog, p) for p in stored],
        "changed_offers": changed_offers(catalog),
        # /ld/: structured data only; the platform-like sections: offers per format and condition
        "sections": {"ld": section_truth(catalog, ld_products(catalog)), **sections_truth(catalog)},
        "second_source": second_truth(catalog),  # /feeds/second.csv: which name merges into which
    }
