"""Propose a profile from a shop's pages: a listing page and a few of its product pages.

Links: the product links are the largest group of same-host links sharing a URL folder
(``/release/…``); pagination is ``rel=next``, or the links to the listing's own path with another
query. Fields: ``structured: schema.org`` when the product pages carry Product / MusicAlbum /
MusicRelease markup, and for whatever the markup lacks, elements whose class names say what they
hold (``.price``, ``.artists``, ``[data-sku]``), kept only if they find a value on the sample pages.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlparse, urlunparse

from scrapy.http import Response, TextResponse

from recordhound.prices import parse_price
from recordhound.exceptions import FieldError, ProfileError
from recordhound.sources import draft_shops
from recordhound.sources.extract import extract_links, extract_release, match_field, structured_data
from recordhound.sources.profile import FIELD_NAMES, MANY_FIELDS, REQUIRED_FIELDS, FieldSpec, SelectorSpec
from recordhound.sources.schema import build_profile
from recordhound.sources.title_rules import BUNDLED, compile_rule

# Words in class names (and data-* attributes) that say which field an element holds.
CLASS_WORDS: dict[str, tuple[str, ...]] = {
    "title": ("title", "product-title", "product-name", "name"),
    "artists": ("artists", "artist"),
    "label": ("label", "record-label", "labels"),
    "catalog_number": ("catno", "cat-no", "catalog-number", "catalogue-number", "catnum"),
    "year": ("year", "release-year", "release-date", "released"),
    "styles": ("styles", "style", "genres", "genre"),
    "price": ("price", "product-price", "amount"),
    "in_stock": ("stock", "availability", "in-stock"),
}
ID_ATTRIBUTES = ("data-sku", "data-product-id", "data-id")
STOCK_ATTRIBUTES = ("data-in-stock", "data-available", "data-stock")


@dataclass
class Draft:
    """The proposed profile document, with a note per key for the comments of its YAML."""

    document: dict[str, object]
    notes: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    matched: dict[str, int] = field(default_factory=dict)  # field → product pages it found a value on
    pages: int = 0

    def yaml(self, source_url: str) -> str:
        return _render(self, source_url)


def product_link_candidates(listing: TextResponse) -> list[str]:
    """The listing's product links, best guess first (the largest same-folder group)."""
    group = _product_group(_links(listing), listing)
    return group[1] if group else []


def draft_profile(name: str, listing: TextResponse, products: list[TextResponse],
                  probes: dict[str, Response] | None = None) -> Draft:
    """``probes``: the answers to ``draft_shops.store_api_probes`` (a WooCommerce shop's Store API)."""
    if not products:
        raise FieldError(f"no product page to learn the fields from: {listing.url} has no product links "
                         "this draft could recognise; give one with --product URL")
    parsed = urlparse(listing.url)
    base = urlunparse((parsed.scheme, parsed.netloc, "/", "", "", ""))
    start = urlunparse(("", "", parsed.path or "/", "", parsed.query, ""))
    draft = Draft({"name": name, "kind": "html", "base_url": base, "start_urls": [start]}, pages=len(products))
    draft.document["links"] = _link_rules(listing, products, draft)
    structured = _structured_fields(name, base, products)
    if structured:
        draft.document["structured"] = "schema.org"
        draft.notes["structured"] = (f"schema.org markup found on {structured.pages} of {len(products)} product "
                                     f"pages; fields from it: {', '.join(structured.found) or 'none'}")
    fields = _html_fields(products, skip=structured.found if structured else ())
    if fields:
        draft.document["fields"] = {n: s for n, (s, _) in fields.items()}
        draft.notes["fields"] = "found by class names: " + ", ".join(
            f"{n} on {count} of {len(products)} pages" for n, (_, count) in fields.items())
    draft.matched = {**({n: structured.counts[n] for n in structured.found} if structured else {}),
                     **{n: count for n, (_, count) in fields.items()}}
    known = set(fields) | set(structured.found if structured else ())
    known |= _shop_knowledge(draft, listing, products, known, probes or {})
    for missing in (n for n in REQUIRED_FIELDS if n not in known):
        draft.warnings.append(f"no selector found for the required field {missing!r}: add it under fields")
    _price_notes(products, draft, structured.found if structured else ())
    return draft


def _shop_knowledge(draft: Draft, listing: TextResponse, products: list[TextResponse], known: set[str],
                    probes: dict[str, Response]) -> set[str]:
    """Spec tables, product names that hold artists / catalogue numbers, and the platform; returns
    the fields these add."""
    added = set()
    spec = draft_shops.spec_fields(products, skip=known)
    if spec:
        fields = draft.document.setdefault("fields", {})
        assert isinstance(fields, dict)
        fields.update({name: {"xpath": xpath} for name, xpath in spec.items()})
        draft.notes["fields"] = (draft.notes.get("fields", "") + "; " if "fields" in draft.notes else "") + \
            "from the spec table: " + ", ".join(spec)
        added |= set(spec)
    try:
        profile = build_profile("(draft)", draft.document)
    except ProfileError:  # no title / artists selector yet: nothing to split
        profile = None
    raws = [extract_release(page, profile) for page in products] if profile else []
    rule = draft_shops.title_rule([r.title or "" for r in raws], [r.artists for r in raws]) if raws else None
    if rule is not None:
        draft.document["title_rules"] = [rule]
        draft.notes["title_rules"] = f"product names such as {raws[0].title!r} hold more than the title"
        added |= {"artists", "title"} if "artists" in compile_rule(BUNDLED[rule]).pattern.groupindex else set()
    found = draft_shops.platform([listing, *products])
    if found:
        draft.notes["platform"] = f"{found} recognised"
    if found == "shopify":
        _shopify(draft, listing, products)
    if found == "woocommerce":
        _woocommerce(draft, probes)
    return added


def _shopify(draft: Draft, listing: TextResponse, products: list[TextResponse]) -> None:
    """A Shopify store: its products and variants from /products.json, in the currency its pages show."""
    parsed = urlparse(listing.url)
    draft.document["base_url"] = urlunparse((parsed.scheme, parsed.netloc, draft_shops.shop_root(listing.url),
                                             "", "", ""))
    draft.document["platform"] = "shopify"
    draft.notes["platform"] += ": products and their variants come from /products.json"
    currency = draft_shops.og_currency(products)
    if currency:
        draft.document["price"] = {"default_currency": currency}


def _woocommerce(draft: Draft, probes: dict[str, Response]) -> None:
    """A WooCommerce shop whose Store API answers: its products from there, no page fetched; else
    the pages, as drafted."""
    root, said = draft_shops.store_api_root(probes)
    draft.notes["platform"] += ": " + said
    if root is None:
        draft.notes["platform"] += "; products come from the pages"
        return
    draft.document["base_url"] = root
    draft.document["platform"] = "woocommerce"
    draft.notes["platform"] += "; products come from it (wp-json/wc/store/v1/products)"


# -- links ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Link:
    url: str
    classes: tuple[str, ...]
    rel: str


def _links(response: TextResponse) -> list[_Link]:
    host = urlparse(response.url).netloc
    found = []
    for anchor in response.css("a[href]"):
        href = (anchor.attrib.get("href") or "").strip()
        if not href or href.startswith(("#", "mailto:", "javascript:", "tel:")):
            continue
        url = response.urljoin(href).split("#", 1)[0]
        if urlparse(url).netloc == host:
            found.append(_Link(url, tuple((anchor.attrib.get("class") or "").split()), anchor.attrib.get("rel", "")))
    return found


def _folder(url: str) -> str:
    path = urlparse(url).path.rstrip("/")  # "/product/name/" is in the folder "/product/"
    return path.rsplit("/", 1)[0] + "/" if path.count("/") > 1 else ""


def _product_group(links: list[_Link], listing: TextResponse) -> tuple[str, list[str]] | None:
    own = urlparse(listing.url).path
    groups: dict[str, list[str]] = defaultdict(list)
    for link in links:
        folder = _folder(link.url)
        if folder and urlparse(link.url).path != own and link.url not in groups[folder]:
            groups[folder].append(link.url)
    if not groups:
        return None
    folder, urls = max(groups.items(), key=lambda item: len(item[1]))
    return folder, urls


def _link_rules(listing: TextResponse, products: list[TextResponse], draft: Draft) -> dict[str, object]:
    links = _links(listing)
    rules: dict[str, object] = {}
    shop = draft_shops.pagination_selector(listing)
    pagination, how = shop if shop else (_pagination(listing, links), "links to the listing with another query")
    if pagination:
        kind = "xpath" if pagination.startswith("/") else "css"
        rules["pagination"] = {kind: pagination, "priority": 20}
        found = extract_links(listing, (SelectorSpec(kind, pagination),))
        draft.notes["links.pagination"] = (f"{how}: {len(found)} on the listing, "
                                           f"e.g. {_short(found[0]) if found else '-'}")
    else:
        draft.warnings.append("no pagination found on the listing: add links.pagination if it has more pages")
    folder = _folder(products[0].url)
    urls = [link.url for link in links if _folder(link.url) == folder]
    rules["product"] = {"css": _link_selector([link for link in links if link.url in urls], links,
                                                 f'a[href*="{folder}"]::attr(href)'),
                        "priority": 10}
    draft.notes["links.product"] = f"{len(set(urls))} on the listing, e.g. {_short(urls[0]) if urls else '-'}"
    return rules


def _pagination(listing: TextResponse, links: list[_Link]) -> str | None:
    if any("next" in link.rel.split() for link in links):
        return "a[rel~=next]::attr(href)"
    own = urlparse(listing.url)
    pages = [link for link in links
             if urlparse(link.url).path == own.path and link.url != listing.url and urlparse(link.url).query]
    if not pages:
        return None
    param = _page_parameter([urlparse(link.url).query for link in pages])
    fallback = f'a[href*="{own.path}?{param}="]::attr(href)' if param else f'a[href^="{own.path}?"]::attr(href)'
    return _link_selector(pages, links, fallback)


def _page_parameter(queries: list[str]) -> str | None:
    names = Counter(part.split("=", 1)[0] for query in queries for part in query.split("&")
                    if re.fullmatch(r"[^=]+=\d+", part))
    return names.most_common(1)[0][0] if names else None


def _link_selector(chosen: list[_Link], links: list[_Link], fallback: str) -> str:
    """A class every chosen link has and no other link has, else the URL pattern."""
    if chosen:
        shared = set(chosen[0].classes).intersection(*(set(link.classes) for link in chosen[1:]))
        for cls in sorted(shared):
            if all(cls not in link.classes for link in links if link not in chosen):
                return f"a.{cls}::attr(href)"
    return fallback


def _short(url: str) -> str:
    parsed = urlparse(url)
    return parsed.path + (f"?{parsed.query}" if parsed.query else "")


# -- fields --------------------------------------------------------------------------------------

@dataclass
class _Structured:
    found: tuple[str, ...]
    counts: dict[str, int]
    pages: int


def _structured_fields(name: str, base: str, products: list[TextResponse]) -> _Structured | None:
    profile = build_profile("(draft)", {"name": name, "base_url": base, "start_urls": ["/"],
                                        "links": {"product": "a::attr(href)"}, "structured": "schema.org"})
    counts: Counter[str] = Counter()
    pages = 0
    for response in products:
        data = structured_data(response, profile)
        pages += bool(data.nodes)
        for field_name, spec in profile.fields.items():
            counts[field_name] += bool(match_field(response, spec, data).values)
    if not pages:
        return None
    return _Structured(tuple(n for n in FIELD_NAMES if counts[n]), dict(counts), pages)


def _html_fields(products: list[TextResponse], skip: tuple[str, ...]) -> dict[str, tuple[object, int]]:
    """field → (its spec for the YAML, how many sample pages it found a value on)."""
    fields: dict[str, tuple[object, int]] = {}
    for name in FIELD_NAMES:
        if name in skip or name == "currency":
            continue
        for spec in _candidates(name, products[0]):
            count = sum(bool(match_field(p, FieldSpec(name, (SelectorSpec("css", spec),))).values) for p in products)
            if count * 2 >= len(products) and count:
                fields[name] = (spec, count)
                break
    return fields


def _candidates(name: str, page: TextResponse) -> list[str]:
    if name == "external_id":
        return [f"[{a}]::attr({a})" for a in ID_ATTRIBUTES if page.css(f"[{a}]")]
    found: list[str] = []
    if name == "in_stock":
        found += [f"[{a}]::attr({a})" for a in STOCK_ATTRIBUTES if page.css(f"[{a}]")]
    if name == "title":
        found += [f"h1.{c}::text" for c in _classes(page.css("h1"))] + ["h1::text"]
    words = CLASS_WORDS.get(name, ())
    text = "::text" if name in ("title",) else " ::text"
    found += [f".{cls}{text}" for word in words for cls in _classes(page.css(f'[class~="{word}"]')) if cls == word]
    return found


def _classes(elements: object) -> list[str]:
    out: list[str] = []
    for element in elements:  # type: ignore[attr-defined]  # a parsel SelectorList
        for cls in (element.attrib.get("class") or "").split():
            if cls not in out:
                out.append(cls)
    return out


def _price_notes(products: list[TextResponse], draft: Draft, structured: tuple[str, ...]) -> None:
    fields = draft.document.get("fields")
    spec = fields.get("price") if isinstance(fields, dict) else None
    if "price" in structured or not isinstance(spec, str):
        return
    seen: dict[str, set[str]] = defaultdict(set)
    for page in products:
        for text in match_field(page, FieldSpec("price", (SelectorSpec("css", spec),))).values[:1]:
            try:
                money = parse_price(text)
            except FieldError as exc:
                draft.notes["price problem"] = f"on {_short(page.url)}: {exc}"
                continue
            seen[money.currency].add(text)
    if seen:
        draft.notes["price"] = "prices seen: " + "; ".join(f"{c}: {', '.join(sorted(t)[:3])}" for c, t in seen.items())


# -- YAML ----------------------------------------------------------------------------------------

def _scalar(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _render(draft: Draft, source_url: str) -> str:
    doc, notes = draft.document, draft.notes
    lines = [
        f"# Drafted by `recordhound profile draft` from {source_url} on {date.today().isoformat()}",
        f"# from the listing and {draft.pages} product page(s). Check it before a crawl:",
        "#   scrapy shell URL, then: profile_check(\"PATH-OF-THIS-FILE\")",
        "#   or record a cassette and run: recordhound profile test PATH-OF-THIS-FILE --cassette FILE",
        *(f"# TODO: {w}" for w in draft.warnings),
    ]
    for key in ("name", "kind", "base_url"):
        lines.append(f"{key}: {_scalar(doc[key])}")
    lines.append("start_urls:")
    lines += [f"  - {_scalar(u)}" for u in doc["start_urls"]]  # type: ignore[attr-defined]
    if "platform" in doc:
        lines.append(f"platform: {_scalar(doc['platform'])}  # {notes['platform']}")
    elif "platform" in notes:
        lines.append(f"# {notes['platform']}")
    if "structured" in doc:
        lines.append(f"structured: {_scalar(doc['structured'])}  # {notes['structured']}")
    if "title_rules" in doc:
        lines.append(f"title_rules: {_scalar(doc['title_rules'])}  # {notes['title_rules']}")
    if "price" in doc:
        lines.append(f"price: {_scalar(doc['price'])}  # the currency of the shop's product pages")
    lines.append("links:                      # which links to follow; higher priority is fetched first")
    for kind, rule in doc["links"].items():  # type: ignore[attr-defined]
        lines.append(f"  {kind}:  # {notes.get(f'links.{kind}', '')}")
        lines += [f"    {k}: {_scalar(v)}" for k, v in rule.items()]
    if "fields" in doc:
        lines.append(f"fields:                     # {notes['fields']}")
        for name, spec in doc["fields"].items():  # type: ignore[attr-defined]
            if isinstance(spec, dict):
                lines.append(f"  {name}:")
                lines += [f"    {k}: {_scalar(v)}" for k, v in spec.items()]
            else:
                lines.append(f"  {name}: {_scalar(spec)}")
    if "price problem" in notes:
        lines.append(f"# a price that did not parse, {notes['price problem']}")
    if "price" in notes:
        lines += [f"# {notes['price']}",
                  "# If a currency's decimal separator is not what the text shows, say it per currency:",
                  "# price: {currencies: {EUR: {decimal_separator: \",\"}, GBP: {decimal_separator: \".\"}}}"]
    return "\n".join(lines) + "\n"
