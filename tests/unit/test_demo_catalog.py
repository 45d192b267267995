from __future__ import annotations

from recordhound.demo import pages
from recordhound.demo.catalog import Catalog
from recordhound.demo.names import STYLES, VARIANT_ARTISTS
from recordhound.demo.site import build_site
from recordhound.demo.truth import build_truth


def test_same_seed_same_shop_and_other_seed_other_shop() -> None:
    a, b, c = Catalog(200, seed=3), Catalog(200, seed=3), Catalog(200, seed=4)
    assert a.products == b.products
    assert a.products != c.products
    assert build_site(a)["/catalog?page=1"].body == build_site(b)["/catalog?page=1"].body


def test_catalog_has_the_mess_real_shops_have() -> None:
    catalog = Catalog(300, seed=1)
    printed = {s for p in catalog.products for s in p.artists}
    assert {"The Beatles", "Beatles, The", "the beatles"} <= printed
    styles = {s for p in catalog.products for s in p.styles}
    assert {"Hip Hop", "Hip-Hop"} & styles and len(styles) > len(STYLES)
    formats = {pages.price_text(catalog.price(p), p.currency, p.price_format)[-1] for p in catalog.products}
    assert {"€", "₽", "R"} <= formats  # "12,99 €", "1 299,00 ₽", "12.99 EUR"
    assert any(t.startswith("$") and "," in t for t in (
        pages.price_text(catalog.price(p), p.currency, p.price_format) for p in catalog.products))
    assert {p.fault for p in catalog.products} >= {"no_price", "flaky", "broken_html", "non_utf8"}
    assert len(VARIANT_ARTISTS) == 3


def test_epochs_change_a_known_subset_of_prices() -> None:
    truth = build_truth(Catalog(1000, seed=1, epoch=1))
    changes = [abs(c["change_percent"]) for c in truth["changed_offers"]]
    assert any(c < 5 for c in changes) and any(c >= 10 for c in changes)
    assert 0 < len(changes) < 200
    assert build_truth(Catalog(1000, seed=1, epoch=1))["changed_offers"] == truth["changed_offers"]
    assert build_truth(Catalog(1000, seed=1, epoch=0))["changed_offers"] == []


def test_truth_counts_match_the_catalog() -> None:
    catalog = Catalog(500, seed=2)
    truth = build_truth(catalog)
    assert truth["counts"]["offers"] == len(catalog.products) == 520
    assert truth["counts"]["releases"] == 500
    assert truth["counts"]["offers_without_price"] == 1
    non_utf8 = build_site(catalog)[truth["faults"]["non_utf8"]]
    assert non_utf8.content_type.endswith("iso-8859-1")
    assert "Sigur R\xf3s".encode("iso-8859-1") in non_utf8.body


def test_pagination_loops_back_to_the_first_page() -> None:
    site = build_site(Catalog(100, seed=1))
    last = max((k for k in site if k.startswith("/catalog?page=")), key=lambda k: int(k.split("=")[1]))
    assert b'class="next" href="/catalog?page=1"' in site[last].body
