"""What ``profile draft`` knows about real shops: the pagination their listings use, the
platforms behind them (Shopify, WooCommerce, Bandcamp), spec tables ("Label", "Cat. No.") and
product names that hold artists and catalogue numbers ("CATNO // Artist - Title").

Pagination, in this order: ``<link rel=next>`` in the head, ``a[rel=next]``, a link whose class
says next (``a.next.page-numbers``, ``pagination__item--next``), a link whose text says next in
a common shop language ("Next", "Weiter", "mehr", "Suivant", "»"...), path pages (``/page/N/``,
``page-N.html``), query pages (``page``, ``p``, ``offset``, ``start``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from urllib.parse import urlparse

from scrapy.http import Response, TextResponse

from recordhound.sources.title_rules import BUNDLED, compile_rule, split_title
from recordhound.text import fold, name_key

NEXT_WORDS = ("next", "next page", "weiter", "nachste", "nachste seite", "mehr", "vor", "suivant", "page suivante",
              "siguiente", "volgende", "avanti", "successiva", "nasta", "neste", "seuraava", "dalej", "dalsi",
              "proxima", "proximo", "sledujushhaja", "следующая", "далее", "次へ", "下一页", "›", "»", ">", "→", ">>")
PAGE_PARAMETERS = ("page", "p", "pg", "offset", "start", "seite", "pagina")
PATH_PAGE = re.compile(r"(?:^|/)(page[/-]|seite[/-])(\d+)(?:/|\.html?)?$")
# a spec table's row heading → field, in a few languages (folded)
SPEC_ROWS: dict[str, tuple[str, ...]] = {
    "artists": ("artist", "artists", "artist s", "kunstler", "interpret", "artiste"),
    "label": ("label", "record label", "plattenlabel", "etiquette"),
    "catalog_number": ("cat no", "cat no.", "catalog number", "catalogue number", "catalog no", "catno",
                       "katalognummer", "kat nr", "reference"),
    "year": ("year", "released", "release year", "release date", "jahr", "erscheinungsjahr", "annee"),
    "styles": ("genre", "genres", "style", "styles", "stil"),
    "format": ("format", "medium", "media"),
    "barcode": ("ean", "barcode", "upc", "gtin", "ean upc"),
    "country": ("country", "land", "pays", "pais", "herkunftsland"),
}
MAX_PROBES = 2  # Store API requests a draft may send
STORE_API_PROBE = "wp-json/wc/store/v1/products?per_page=1"
TITLE_RULE_ORDER = ("catno_slashes_artist_title", "artist_title_catno", "catno_artist_title", "artist_title")


def pagination_selector(listing: TextResponse) -> tuple[str, str] | None:
    """(selector, how it was found) for the listing's next page, or None."""
    if listing.css("link[rel~=next][href]"):
        return "link[rel~=next]::attr(href)", "<link rel=next> in the head"
    if listing.css("a[rel~=next][href]"):
        return "a[rel~=next]::attr(href)", "a[rel=next]"
    for anchor in listing.css("a[href]"):
        for cls in (anchor.attrib.get("class") or "").split():
            if "next" in cls.lower() and len(listing.css(f"a.{_css_class(cls)}[href]")) == 1:
                return f"a.{_css_class(cls)}::attr(href)", f"the link of class {cls!r}"
    for anchor in listing.css("a[href]"):
        text = " ".join(anchor.css("::text").getall()).strip()
        if text and (fold(text) in NEXT_WORDS or text in NEXT_WORDS):
            return f'//a[normalize-space()="{text}"]/@href', f"the link text {text!r}"
    return _path_pages(listing) or _query_pages(listing)


def _css_class(cls: str) -> str:
    return re.sub(r"([^\w-])", r"\\\1", cls)


def _path_pages(listing: TextResponse) -> tuple[str, str] | None:
    hrefs = [h.strip() for h in listing.css("a::attr(href)").getall()]
    found = Counter(m.group(1) for h in hrefs if (m := PATH_PAGE.search(urlparse(h).path)))
    if not found:
        return None
    marker = found.most_common(1)[0][0]
    return f'a[href*="{marker}"]::attr(href)', f"path pages ({marker}N)"


def _query_pages(listing: TextResponse) -> tuple[str, str] | None:
    own = urlparse(listing.url).path
    names: Counter[str] = Counter()
    for href in listing.css("a::attr(href)").getall():
        url = urlparse(listing.urljoin(href))
        if url.path == own:
            names.update(k for k, _, v in (p.partition("=") for p in url.query.split("&"))
                         if k.lower() in PAGE_PARAMETERS and v.isdigit())
    if not names:
        return None
    name = names.most_common(1)[0][0]
    return f'a[href*="{name}="]::attr(href)', f"query pages (?{name}=N)"


def platform(pages: list[TextResponse]) -> str | None:
    """"shopify", "woocommerce", "bandcamp" or None, from the markup the platforms leave."""
    text = " ".join(p.text[:200_000] for p in pages)
    if "cdn.shopify.com" in text or "window.Shopify" in text:
        return "shopify"
    if any("woocommerce" in (p.css("body::attr(class)").get() or "") for p in pages) or "wp-content/plugins/woocommerce" in text:
        return "woocommerce"
    if any((p.css('meta[name="generator"]::attr(content)').get() or "").lower() == "bandcamp" for p in pages) \
            or "bcbits.com" in text:
        return "bandcamp"
    return None


def shop_root(url: str) -> str:
    """A Shopify store's root: the path before /collections/ or /products/ (usually "/")."""
    path = urlparse(url).path
    for marker in ("/collections/", "/products/", "/products.json"):
        if marker in path:
            return path.split(marker, 1)[0] + "/"
    return "/"


def store_api_probes(listing: TextResponse) -> list[str]:
    """A WooCommerce listing: where its Store API would answer, at most ``MAX_PROBES`` URLs on the
    listing's own host (the REST root WordPress names in ``<link rel="https://api.w.org/">``, then
    the folder before ``/shop/`` or ``/product/``, then the host's root)."""
    if platform([listing]) != "woocommerce":
        return []
    host = urlparse(listing.url).netloc
    roots = [listing.urljoin(h).removesuffix("/").removesuffix("/wp-json") + "/"
             for h in listing.css('link[rel="https://api.w.org/"]::attr(href)').getall()]
    path = urlparse(listing.url).path
    roots += [listing.urljoin(path.split(m, 1)[0] + "/") for m in ("/shop/", "/product/") if m in path]
    roots.append(listing.urljoin("/"))
    wanted = [r for r in dict.fromkeys(roots) if urlparse(r).netloc == host][:MAX_PROBES]
    return [r + STORE_API_PROBE for r in wanted]


def store_api_root(probes: dict[str, Response]) -> tuple[str | None, str]:
    """(the shop root whose Store API answered with products, or None; what the probes said)."""
    said = []
    for url, response in probes.items():
        products = _json_list(response) if response.status == 200 else None
        if products and all(isinstance(p, dict) and "prices" in p for p in products):
            return url.split(STORE_API_PROBE, 1)[0], f"its Store API answers at {url}"
        said.append(f"{url}: HTTP {response.status}" if response.status != 200 else f"{url}: no products")
    return None, "its Store API did not answer (" + ("; ".join(said) or "no probe") + ")"


def _json_list(response: Response) -> list[object] | None:
    try:
        value = json.loads(response.body)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def og_currency(pages: list[TextResponse]) -> str | None:
    for page in pages:
        for prop in ("og:price:currency", "product:price:currency"):
            code = page.css(f'meta[property="{prop}"]::attr(content)').get()
            if code and re.fullmatch(r"[A-Z]{3}", code.strip()):
                return code.strip()
    return None


def spec_fields(pages: list[TextResponse], skip: set[str]) -> dict[str, str]:
    """Fields a spec table's rows hold (``<tr><th>Label</th><td>...</td></tr>``, or dt/dd), as
    XPath on the row heading's text; kept when found on at least half of the pages."""
    found: dict[str, str] = {}
    for heading in pages[0].xpath("//tr/th | //dt"):
        text = " ".join(heading.css("::text").getall()).strip()
        field = next((f for f, words in SPEC_ROWS.items() if fold(text) in words), None)
        if field is None or field in skip or field in found:
            continue
        cell = (f'//tr[th[normalize-space()="{text}"]]/td' if heading.root.tag == "th"
                else f'//dt[normalize-space()="{text}"]/following-sibling::dd[1]')
        linked = bool(pages[0].xpath(f"{cell}//a"))  # "<a>House</a>, <a>Techno</a>": one name per link
        xpath = f"{cell}//a/text()" if linked else f"{cell}//text()"
        if sum(bool("".join(p.xpath(xpath).getall()).strip()) for p in pages) * 2 >= len(pages):
            found[field] = xpath
    return found


def title_rule(titles: list[str], artists: list[list[str]]) -> str | None:
    """The bundled rule that splits the sample pages' names, when it agrees with the artists the
    pages give (a plain "Artist - Title" rule only when they do: a title may hold " - ")."""
    for name in TITLE_RULE_ORDER:
        rule = compile_rule(BUNDLED[name])
        splits = [split_title(t, (rule,)) for t in titles]
        if not titles or sum(bool(s) for s in splits) * 2 < len(titles):
            continue
        agree = [name_key(s["artists"]) == name_key(" / ".join(a)) for s, a in zip(splits, artists) if s and a]
        if (agree and all(agree)) or (not agree and "catalog_number" in rule.pattern.groupindex):
            return name
    return None
