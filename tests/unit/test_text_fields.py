"""The visible-text rules of the zero-selector path: a price, the shop's id and the stock near the
main heading, only where the markup said nothing, and never in profiles that name their fields."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse

from recordhound.sources.page_text import main_heading
from recordhound.sources.schema import build_profile
from recordhound.sources.extract import extract_release
from recordhound.normalize import normalize_release

CHROME_TOP = """<header class="site-header"><nav><a href="/">Shop</a></nav>
<div class="mini-cart"><span class="cart-price">€ 99,00</span></div></header>"""
CHROME_BOTTOM = """<div class="related-products"><h3>You may also like</h3>
<div class="product-price">€ 7,50</div><a data-product-id="555" href="/p/555">Other record</a></div>
<footer><span class="price">Gift cards from € 10,00</span><p>SKU: FOOT-1</p></footer>"""


def _page(product: str, head: str = "") -> HtmlResponse:
    body = (f"<html><head><title>Blue Monday 12\" | Shop</title>{head}</head><body>{CHROME_TOP}"
            f"<main><h1>Blue Monday 12\"</h1>{product}</main>{CHROME_BOTTOM}</body></html>")
    return HtmlResponse("https://shop.example/p/1", body=body.encode(), encoding="utf-8")


def _zero_selector(**extra: object) -> object:
    return build_profile("(test)", {"name": "s", "base_url": "https://shop.example/", "start_urls": ["/"],
                                    "links": {"product": "a::attr(href)"}, "structured": "schema.org", **extra})


def _read(product: str, head: str = "", **extra: object):  # type: ignore[no-untyped-def]
    return extract_release(_page(product, head), _zero_selector(**extra))  # type: ignore[arg-type]


def test_price_named_by_class_near_the_heading_not_the_cart_related_or_footer_price() -> None:
    raw = _read('<div class="product-info"><span class="current-price">€ 24,99</span></div>')
    assert raw.price == "€ 24,99"


def test_crossed_out_old_price_is_not_the_price() -> None:
    raw = _read('<p><span class="price price--old">€ 29,99</span> <del>€ 27,00</del>'
                '<span class="price price--sale">€ 19,99</span></p>')
    assert raw.price == "€ 19,99"


def test_price_block_with_was_and_now_gives_the_now_part() -> None:
    raw = _read('<div data-testid="price"><span>-20%</span><span><span>statt</span> 25.00</span>'
                '<span>CHF 20.00</span></div>')
    assert raw.price == "CHF 20.00"


def test_price_split_over_spans_reads_as_one_amount() -> None:
    raw = _read('<span class="a-price"><span class="a-price-symbol">$</span><span class="a-price-whole">'
                '34.</span><span class="a-price-fraction">98</span></span>')
    assert raw.price == "$34.98"


def test_magento_price_amount_attribute_is_machine_readable() -> None:
    raw = _read('<span class="price-wrapper" data-price-amount="1299" data-price-type="finalPrice">'
                '<span class="price">1.299,00 €</span></span>')
    assert (raw.price, "price" in raw.structured) == ("1299", True)


def test_only_prices_elsewhere_on_the_page_give_no_price() -> None:
    assert _read("<p>Pressed on 180 g vinyl.</p>").price is None


def test_markup_price_wins_over_visible_text() -> None:
    head = '<meta property="product:price:amount" content="21.00"><meta property="product:price:currency" content="EUR">'
    raw = _read('<span class="price">€ 19,99</span>', head)
    assert raw.price == "21.00"


def test_profile_that_names_a_field_never_reads_visible_text() -> None:
    raw = _read('<span class="price">€ 19,99</span><p>SKU: REC-42</p><button class="add-to-cart">Add</button>',
                fields={"title": "h1::text"})
    assert (raw.price, raw.text_id, raw.in_stock) == (None, None, None)


@pytest.mark.parametrize(("product", "expected"), [
    ('<dl><dt>SKU</dt><dd>REC-0042</dd></dl>', "REC-0042"),
    ('<p>Art.-Nr.: 100245</p>', "100245"),
    ('<p>Item #A7731</p>', "A7731"),
    ('<li>Model: TT-500B</li>', "TT-500B"),
    ('<li>Product code 88123</li>', "88123"),
    ('<form data-product-id="4711"><button class="add-to-cart">Add</button></form>', "4711"),
])
def test_shop_id_from_a_label_or_an_id_attribute(product: str, expected: str) -> None:
    raw = _read(product)
    assert (raw.text_id, raw.external_id) == (expected, None)  # reported; the offer stays named by its page


def test_shop_id_from_meta_itemprop() -> None:
    assert _read("", '<meta itemprop="mpn" content="WARP-92">').text_id == "WARP-92"


def test_id_labels_in_sentences_or_the_footer_are_not_the_id() -> None:
    assert _read("<p>Use the code in your order confirmation to track record 1 of 2.</p>").text_id is None


@pytest.mark.parametrize(("product", "expected"), [
    ('<p class="stock-status">Out of stock</p><button class="add-to-cart" disabled>Add</button>', "sold_out"),
    ('<p class="availability">Auf Lager</p>', "in_stock"),
    ('<button class="btn add-to-cart">Add to cart</button>', "in_stock"),
    ('<button class="btn add-to-cart" disabled>Add to cart</button>', "sold_out"),
])
def test_stock_from_its_wording_or_the_add_to_cart_button(product: str, expected: str) -> None:
    assert _read(product).in_stock == expected


def test_no_stock_wording_and_no_cart_button_says_nothing() -> None:
    assert _read("<p>Ships in 2 days.</p>").in_stock is None


def test_main_heading_is_the_one_in_the_title_not_the_logo() -> None:
    page = HtmlResponse("https://shop.example/p/1", encoding="utf-8", body=(
        b"<html><head><title>Blue Monday | Shop</title></head><body><header><h1>Shop</h1></header>"
        b"<h1>Blue Monday</h1></body></html>"))
    heading = main_heading(page.selector)
    assert heading is not None and heading.text == "Blue Monday"


def test_two_records_printing_one_model_value_stay_two_offers() -> None:
    """A text-read id is a guess ("Model: 12-inch" on every record of a shop): offers stay named by
    their pages, so two records never share an offer or its price history."""
    profile = _zero_selector()
    ids = []
    for path in ("/p/1", "/p/2"):
        page = _page('<dl><dt>Model</dt><dd>12-inch</dd></dl><span class="price">€ 24,99</span>')
        raw = extract_release(page.replace(url=f"https://shop.example{path}"), profile)  # type: ignore[arg-type]
        raw.title, raw.artists = "A record", ["An artist"]  # the page's markup names neither
        outcome = normalize_release(raw, profile)  # type: ignore[arg-type]
        assert outcome.release is not None, outcome
        ids += [offer.external_id for offer in outcome.release.all_offers()]
    assert ids == ["https://shop.example/p/1", "https://shop.example/p/2"]
