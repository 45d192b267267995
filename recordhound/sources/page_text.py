"""Where a product page's own visible text is: the main product's heading, and the page regions
that belong to other things (header, footer, navigation, related products, carousels, crossed-out
prices).

The visible-text rules (:mod:`recordhound.sources.text_fields`) look for a price, the shop's id and
the stock near the main product only: the longest ``h1`` the page's title holds (else the first
``h1``), searched outward from it in document order, outside the regions
:meth:`ProductPage.elsewhere` names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml.html import HtmlElement
from parsel import Selector

from recordhound.text import clean, fold

# Elements whose text is never the page's own product text.
HIDDEN_TAGS = frozenset({"script", "style", "noscript", "template", "head", "select", "option", "svg"})
ELSEWHERE_TAGS = frozenset({"header", "footer", "nav", "aside", "del", "s", "strike", "dialog"})
# class / id words of regions that hold other products, menus or the site's chrome.
ELSEWHERE_WORDS = ("header", "footer", "navbar", "navigation", "menu", "breadcrumb", "related", "recommend",
                   "similar", "carousel", "swiper", "slick", "upsell", "crosssell", "cross", "also",
                   "recently", "viewed", "minicart", "cookie", "newsletter", "sidebar")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def words(value: str) -> list[str]:
    """An attribute value as lower-case words: "priceBlock_our-price" → price, block, our, price."""
    return [w for w in _WORD_SPLIT.split(_CAMEL.sub(" ", value).lower()) if w]


def naming(element: HtmlElement) -> str:
    """What an element's class, id, itemprop and data-* attributes say it is, lower case."""
    parts = [element.get(a) or "" for a in ("class", "id", "itemprop")]
    for name, value in element.attrib.items():
        if name.startswith("data-"):
            parts += [name[5:], value if len(value) < 60 else ""]
    return " ".join(parts).lower()


def _named_elsewhere(element: HtmlElement) -> bool:
    ids = " ".join(words((element.get("class") or "") + " " + (element.get("id") or "")))
    return any(f" {w}" in f" {ids}" for w in ELSEWHERE_WORDS)


def visible_text(element: HtmlElement) -> str:
    """The element's text without scripts, styles or crossed-out parts, on one line."""
    parts: list[str] = []
    _collect(element, parts, top=True)
    return clean("".join(parts)) or ""


def _collect(element: HtmlElement, parts: list[str], top: bool = False) -> None:
    tag = element.tag if isinstance(element.tag, str) else ""
    if not top and (tag in HIDDEN_TAGS or tag in ("del", "s", "strike")):
        parts.append(" ")
        if element.tail:
            parts.append(element.tail)
        return
    if tag and element.text:
        parts.append(element.text)
    for child in element:
        _collect(child, parts)
    if not top and element.tail:
        parts.append(element.tail)


def main_heading(page: Selector) -> HtmlElement | None:
    """The product's own heading: the longest ``h1`` whose words are all in the page's title (a
    logo's ``h1`` holds the shop's name, shorter), else the first ``h1`` outside the site's
    header, navigation and related products, else the first ``h1``."""
    title = fold(" ".join(page.css("title::text, meta[property='og:title']::attr(content)").getall()))
    headings = [(h.root, fold(visible_text(h.root))) for h in page.css("h1")]
    headings = [(h, text) for h, text in headings if text and not any(t in HIDDEN_TAGS for t in _tags(h))]
    titled = [(len(text), -i, h) for i, (h, text) in enumerate(headings) if text in title]
    if titled:
        return max(titled)[2]
    page_wide = ProductPage(page.root, None)
    own = [h for h, _ in headings if not page_wide.elsewhere(h)]
    return (own or [h for h, _ in headings] or [None])[0]


def _tags(element: HtmlElement) -> list[str]:
    return [a.tag for a in element.iterancestors() if isinstance(a.tag, str)]


class ProductPage:
    """A page's elements around its main heading (``anchor``), and which are elsewhere: hidden,
    or inside the site's chrome or another product's block. A region that holds the anchor is the
    product's own, whatever its name ("product-header", a ``<header>`` around the ``h1``)."""

    def __init__(self, root: HtmlElement, anchor: HtmlElement | None) -> None:
        self.anchor = anchor
        self._holding = set(anchor.iterancestors()) if anchor is not None else set()
        self._elsewhere: dict[HtmlElement, bool] = {}
        self._root = root

    def elsewhere(self, element: HtmlElement) -> bool:
        """The element, or one around it, is hidden or belongs to something other than the
        product; each element's answer is kept (children ask their parents)."""
        path: list[HtmlElement] = []
        node: HtmlElement | None = element
        while node is not None and node not in self._elsewhere:
            path.append(node)
            node = node.getparent()
        known = self._elsewhere[node] if node is not None else False
        for node in reversed(path):
            known = known or self._own(node)
            self._elsewhere[node] = known
        return self._elsewhere[element]

    def _own(self, node: HtmlElement) -> bool:
        tag = node.tag if isinstance(node.tag, str) else ""
        if tag in HIDDEN_TAGS:
            return True
        return node not in self._holding and (tag in ELSEWHERE_TAGS or _named_elsewhere(node))

    def around(self, limit: int) -> Iterator[HtmlElement]:
        """Up to ``limit`` elements in document order of distance from the anchor: the next one
        after it, then the one before, and so on; from the top of the page when there is none."""
        elements = [e for e in self._root.iter() if isinstance(e.tag, str)]
        start = elements.index(self.anchor) if self.anchor is not None else 0
        after, before = elements[start:start + limit], elements[max(0, start - limit):start][::-1]
        for i in range(max(len(after), len(before))):
            if i < len(after):
                yield after[i]
            if i < len(before):
                yield before[i]
