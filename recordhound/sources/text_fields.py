"""A price, the shop's id and the stock read from a product page's visible text, for pages whose
markup states none of them (``structured: schema.org`` with no field named; markup always wins).

Each rule looks near the main product's heading, outward in document order, and skips what
belongs to other things (:mod:`recordhound.sources.page_text`):

- **price**: the first element whose class, id, itemprop or data-* attribute names a price
  ("price", "product-price", "current-price", "sale", "amount"; not "old", "was", "compare",
  "strike", "list"…) and whose own text is one amount recordhound's price parser reads
  (``data-price-amount`` / ``content`` attributes as written);
- **external_id**: an element's ``data-sku`` / ``data-product-id``, a ``meta itemprop=sku|mpn|
  productID``, else a labelled value: "SKU: …", "Art.-Nr. …", "Item #…", "Model …", "Product code …";
- **in_stock**: an element named for stock or availability whose text recordhound reads as a
  stock state ("Out of stock", "Ausverkauft"), else an add-to-cart button (disabled: sold out).
"""

from __future__ import annotations

import logging
import re

from lxml.html import HtmlElement
from parsel import Selector

from recordhound.exceptions import FieldError
from recordhound.items import RawRelease
from recordhound.music import availability
from recordhound.prices import parse_price
from recordhound.sources.page_text import ProductPage, main_heading, naming, visible_text, words
from recordhound.text import clean

logger = logging.getLogger(__name__)

PRICE_STEMS = ("price", "preis", "prix", "precio", "preco", "prezzo", "cena", "amount", "sale")
# Words beside a price stem that make it another price than the one to pay now.
NOT_PRICE = frozenset({"old", "was", "compare", "strike", "striked", "del", "before", "regular", "original",
                       "origin", "list", "rrp", "msrp", "uvp", "crossed", "through", "save", "saving", "savings",
                       "discount", "reduced", "per", "unit", "shipping", "delivery", "installment", "monthly",
                       "range", "filter", "slider", "total", "bonus", "coupon", "min", "max", "label", "from",
                       "instead", "statt", "alt", "ancien", "barre", "tachado", "antes", "vorher", "count", "qty",
                       "quantity"})
# Words in a price's own text that make it the crossed-out one ("statt 4.50", "was £12").
WAS_WORDS = frozenset({"was", "statt", "instead", "before", "uvp", "rrp", "msrp", "vorher", "antes", "avant"})
MAX_PRICE_CHARS = 40  # a price element's text; longer is a block holding more than a price
_AMOUNT = re.compile(r"\d(?:[\d.,'\u00a0\u202f ]*\d)?")
ID_ATTRIBUTES = ("data-sku", "data-product-sku", "data-product-id", "data-productid", "data-item-id")
ID_ITEMPROPS = ("sku", "mpn", "productID")
_ID_LABEL = re.compile(
    r"(?:\bsku|\basin|art(?:ikel)?\.?\s*-?\s*nr|artikelnummer|item\s*(?:#|no\.?|number|nr\.?)|"
    r"\bmodel(?:\s*(?:no\.?|number|#))?|product\s*(?:code|id|no\.?|number)|"
    r"r[ée]f(?:[ée]rence)?\.?|c[óo]digo|(?:\bcode|код)(?=\s*:))\.?\s*[:#]?\s*(?P<id>[A-Za-z0-9][\w./-]{2,40})?$",
    re.IGNORECASE)
MAX_LABEL_CHARS = 60  # a label and its value; longer is a sentence
_ID = re.compile(r"[A-Za-z0-9][\w./-]{2,40}")
STOCK_WORDS = ("stock", "availability", "available", "avail", "inventory", "soldout", "lagerstand", "lager")
CART_WORDS = ("addtocart", "add-to-cart", "add_to_cart", "addtobag", "add-to-bag", "buy-now", "buynow",
              "add-to-basket", "addtobasket")
SCAN_LIMIT = 4000  # elements looked at on each side of the heading (product details sit far below it)


def fill_from_text(page: Selector, raw: RawRelease, default_currency: str | None) -> list[str]:
    """Fill the page's price, id and stock from visible text where the markup gave none; the
    names of the fields filled."""
    if not isinstance(page.root, HtmlElement):
        return []
    product = ProductPage(page.root, main_heading(page))
    filled: list[str] = []
    if raw.price is None and not any(o.price for o in raw.offers):
        found = text_price(product, raw.currency or default_currency)
        if found is not None:
            raw.price, machine = found
            if machine:
                raw.structured.append("price")
            filled.append("price")
    if raw.external_id is None and not any(o.external_id for o in raw.offers):
        raw.text_id = text_id(page, product)  # a guess: two pages may print one "Model", so not the offer's id
        filled += ["text_id"] if raw.text_id else []
    if raw.in_stock is None and not any(o.availability for o in raw.offers):
        raw.in_stock = text_stock(product)
        filled += ["in_stock"] if raw.in_stock else []
    if filled:
        logger.debug("%s: %s read from the page's visible text", raw.url, ", ".join(filled))
    return filled


def names_price(element: HtmlElement) -> bool:
    """Its attributes name a price to pay now, not a crossed-out, unit or shipping one."""
    found = False
    for word in words(naming(element)):
        pieces = [p for p in re.split("|".join(PRICE_STEMS), word) if p]
        if word in NOT_PRICE or any(p in NOT_PRICE for p in pieces):
            return False
        found = found or any(stem in word for stem in PRICE_STEMS[:-2]) or word in PRICE_STEMS
    return found


def text_price(product: ProductPage, currency: str | None) -> tuple[str, bool] | None:
    """(price text, machine-readable) of the nearest element named for the price to pay; in one
    that shows two (old and new), the part that is one price and is not the crossed-out one."""
    for element in product.around(SCAN_LIMIT):
        if not names_price(element) or product.elsewhere(element):
            continue
        machine = element.get("data-price-amount") or element.get("content")
        if machine and _AMOUNT.fullmatch(machine) and _one_price(machine, currency, True):
            return machine, True
        text = visible_text(element)
        if _one_price(text, currency):
            return text, False
        if len(_AMOUNT.findall(text)) > 1 and len(text) <= 2 * MAX_PRICE_CHARS:
            part = _price_part(element, currency)
            if part:
                return part, False
    return None


def _price_part(element: HtmlElement, currency: str | None) -> str | None:
    for part in element.iterdescendants():
        if not isinstance(part.tag, str) or part.tag in ("del", "s", "strike") or not names_price(part) and _parent(part):
            continue
        text = visible_text(part)
        if _one_price(text, currency) and not any(w in WAS_WORDS for w in words(naming(part)) + words(text)):
            return text
    return None


def _parent(element: HtmlElement) -> bool:
    """It holds other elements (comments do not count)."""
    return any(isinstance(child.tag, str) for child in element)


def _one_price(text: str, currency: str | None, machine: bool = False) -> bool:
    if not text or len(text) > MAX_PRICE_CHARS or "%" in text or len(_AMOUNT.findall(text)) != 1:
        return False
    if any(w in WAS_WORDS for w in words(text)):
        return False
    try:
        return parse_price(text, currency_text=currency, default_currency="XXX", schema_number=machine).amount > 0
    except FieldError:
        return False


def text_id(page: Selector, product: ProductPage) -> str | None:
    """The shop's id of the product: a ``meta itemprop=sku|mpn|productID``, else the id attribute
    or labelled value nearest the heading."""
    for prop in ID_ITEMPROPS:
        value = clean(page.css(f"meta[itemprop={prop}]::attr(content)").get())
        if value:
            return value
    for element in product.around(SCAN_LIMIT):
        if product.elsewhere(element):
            continue
        value = next((clean(element.get(name)) for name in ID_ATTRIBUTES if clean(element.get(name))), None)
        if value:
            return value
        if _parent(element):
            continue  # a label and its value are each an element's own text
        text = visible_text(element)
        match = _ID_LABEL.match(text) if len(text) < MAX_LABEL_CHARS else None
        if match:
            value = match.group("id") or _next_text(element)  # <dt>SKU</dt><dd>REC-42</dd>
            if value and _ID.fullmatch(value) and any(ch.isdigit() for ch in value):
                return value
    return None


def _next_text(element: HtmlElement) -> str | None:
    """The text of the first element after this one in the page that holds text and no element."""
    for follower in element.xpath("following::*[not(*)][normalize-space()][1]"):
        return visible_text(follower)
    return None


def text_stock(product: ProductPage) -> str | None:
    """A stock element's wording, else the add-to-cart button: enabled in stock, disabled sold out."""
    cart: str | None = None
    for element in product.around(SCAN_LIMIT):
        named = " ".join(words(naming(element)))
        if product.elsewhere(element):
            continue
        if any(w in named.split() for w in STOCK_WORDS) or "out of stock" in named or "sold out" in named:
            state = availability(visible_text(element)[:60])
            if state:
                return state
        if cart is None and any(w.replace("-", " ").replace("_", " ") in named for w in CART_WORDS):
            disabled = element.get("disabled") is not None or "disabled" in named.split()
            cart = "sold_out" if disabled else "in_stock"
    return cart
