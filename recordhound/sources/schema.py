"""Validate a parsed profile document and build a :class:`Profile`.

Every error names the profile file and the dotted key, and says what was expected.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any
from urllib.parse import urlparse
from decimal import Decimal, InvalidOperation


from recordhound.prices import DECIMAL_SEPARATORS, THOUSANDS_SEPARATORS, PriceRule
from recordhound.sources import schema_org, schema_shops
from recordhound.sources.schema_doc import Doc as _Doc, checked as _checked, selectors as _selectors
from recordhound.sources.profile import (
    FIELD_NAMES,
    FILE_KINDS,
    LINK_KINDS,
    MANY_FIELDS,
    REQUIRED_FIELDS,
    FieldSpec,
    LinkSpec,
    RENDER_KINDS,
    SELECTOR_KINDS,
    PriceSpec,
    Profile,
    HealthSpec,
    PolitenessSpec,
    RecrawlSpec,
    RenderSpec,
    RetrySpec,
    SelectorSpec,
)

TOP_KEYS = {"name", "kind", "base_url", "start_urls", "links", "fields", "price", "trusted", "allowed_domains",
            "render", "structured", "retry", "politeness", "health", "recrawl", "offers", "title_rules",
            "sitemap", "robots", "platform"}
PLATFORMS = ("shopify", "woocommerce")
FILE_KEYS = {"name", "kind", "location", "fields", "price", "trusted"}
KINDS = ("html", *FILE_KINDS)


def build_profile(path: str, document: Any) -> Profile:
    root = _Doc(path, "", document)
    root.mapping(TOP_KEYS | FILE_KEYS)
    kind = root.child("kind").string(required=False) or "html"
    if kind not in KINDS:
        raise root.fail(f"unknown kind {kind!r}; expected one of {list(KINDS)}", "kind")
    if kind in FILE_KINDS:
        return _file_profile(root, path, kind)
    root.mapping(TOP_KEYS)
    base_url = _base_url(root.child("base_url"))
    structured = root.child("structured").string(required=False)
    if structured is not None and structured not in schema_org.STANDARDS:
        raise root.fail(f"unknown structured data standard {structured!r}; expected one of "
                        f"{list(schema_org.STANDARDS)}", "structured")
    platform = root.child("platform").string(required=False)
    if platform is not None and platform not in PLATFORMS:
        raise root.fail(f"unknown platform {platform!r}; expected one of {list(PLATFORMS)}", "platform")
    return Profile(
        name=root.child("name").string() or "",
        path=path,
        kind=kind,
        base_url=base_url,
        start_urls=root.child("start_urls").strings(),
        links=MappingProxyType(_links(root.child("links"), required=platform is None)),
        fields=MappingProxyType(_fields(root.child("fields"), structured)),
        price=_price(root.child("price")),
        allowed_domains=_domains(root.child("allowed_domains")),
        trusted=root.child("trusted").boolean(False),
        render=MappingProxyType(_render(root.child("render"))),
        structured=structured,
        retry=_retry(root.child("retry")),
        politeness=_politeness(root.child("politeness")),
        health=_health(root.child("health")),
        recrawl=_recrawl(root.child("recrawl")),
        offers=schema_shops.offers(root.child("offers")),
        title_rules=schema_shops.title_rules(root.child("title_rules")),
        sitemap=schema_shops.sitemap(root.child("sitemap")),
        robots=schema_shops.robots(root.child("robots")),
        platform=platform,
        visible_text=structured is not None and not root.child("fields").value,
    )


def _recrawl(doc: _Doc) -> RecrawlSpec:
    """``recrawl: {product: 6h, listing: 1h, min: 30m, max: 7d}`` (ISO 8601 durations too)."""
    from recordhound.frontier.recrawl import parse_duration

    if doc.value is None:
        return RecrawlSpec()
    doc.mapping({*LINK_KINDS, "min", "max"})
    seconds: dict[str, float] = {}
    for key, value in doc.value.items():
        found = parse_duration(value)
        if found is None:
            raise doc.fail(f"expected a duration such as 30m, 6h, 2d or PT6H, got {value!r}", f"{doc.key}.{key}")
        seconds[key] = found
    low, high = seconds.pop("min", None), seconds.pop("max", None)
    if not seconds:
        raise doc.fail(f"name at least one link kind to recrawl ({', '.join(LINK_KINDS)})")
    if low is not None and high is not None and low > high:
        raise doc.fail(f"min ({low:g} s) is above max ({high:g} s)")
    return RecrawlSpec(MappingProxyType(seconds), low, high)

def _health(doc: _Doc) -> HealthSpec:
    """``health: {max_failed_share: 0.1}``: a finished crawl with more failed requests has failed."""
    if doc.value is None:
        return HealthSpec()
    doc.mapping({"max_failed_share"})
    share = doc.child("max_failed_share").seconds()
    if share is not None and share > 1:
        raise doc.fail(f"expected a share between 0 and 1, got {share}", f"{doc.key}.max_failed_share")
    return HealthSpec(share)

def _retry(doc: _Doc) -> RetrySpec:
    """``retry: {base_seconds: 2, cap_seconds: 120, max_attempts: 8, http_codes: [520]}``"""
    if doc.value is None:
        return RetrySpec()
    doc.mapping({"base_seconds", "cap_seconds", "max_attempts", "http_codes"})
    codes = doc.child("http_codes").value or []
    if not isinstance(codes, list) or not all(isinstance(c, int) and 400 <= c <= 599 for c in codes):
        raise doc.fail(f"expected a list of HTTP status codes (400-599), got {codes!r}", f"{doc.key}.http_codes")
    return RetrySpec(doc.child("base_seconds").seconds(), doc.child("cap_seconds").seconds(),
                     doc.child("max_attempts").positive_integer(), tuple(codes))


def _politeness(doc: _Doc) -> PolitenessSpec:
    """``politeness: {requests_per_second: 2, concurrency: 4}`` (per host, every node together)"""
    if doc.value is None:
        return PolitenessSpec()
    doc.mapping({"requests_per_second", "concurrency"})
    return PolitenessSpec(doc.child("requests_per_second").seconds(), doc.child("concurrency").positive_integer())


def _render(doc: _Doc) -> dict[str, RenderSpec]:
    """``render: {product: {wait_for: "h1", timeout: 20}, listing: true}``"""
    if doc.value is None:
        return {}
    doc.mapping(set(RENDER_KINDS))
    found = {}
    for kind, value in doc.value.items():
        child = doc.child(kind)
        if value is True:
            found[kind] = RenderSpec()
            continue
        if value is False:
            continue
        child.mapping({"wait_for", "timeout"})
        wait_for = child.child("wait_for").string(required=False)
        if wait_for is not None:
            _checked(child.child("wait_for"), "css", wait_for)
        timeout = child.child("timeout").value
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise child.fail(f"expected a number of seconds above 0, got {timeout!r}", f"{child.key}.timeout")
        found[kind] = RenderSpec(wait_for, float(timeout or 15.0))
    return found


def _file_profile(root: _Doc, path: str, kind: str) -> Profile:
    """CSV / XLSX / JSON sources: ``fields`` map each field to a column (or JSON key)."""
    root.mapping(FILE_KEYS)
    fields = root.child("fields")
    fields.mapping(set(FIELD_NAMES))
    missing = [name for name in REQUIRED_FIELDS if fields.value.get(name) is None]
    if missing:
        raise fields.fail(f"required field is missing (needed: {list(REQUIRED_FIELDS)})", f"fields.{missing[0]}")
    specs = {}
    for name, value in fields.value.items():
        child = fields.child(name)
        if isinstance(value, dict):
            child.mapping({"column", "split"})
            column = child.child("column").string() or ""
            split = child.child("split").strings() if value.get("split") is not None else ()
            if split and name not in MANY_FIELDS:
                raise child.fail(f"'split' only applies to {list(MANY_FIELDS)}", f"{child.key}.split")
        else:
            column, split = child.string() or "", ()
        specs[name] = FieldSpec(name, (SelectorSpec("column", column),), name in REQUIRED_FIELDS, split)
    return Profile(
        name=root.child("name").string() or "", path=path, kind=kind, base_url="", start_urls=(),
        links=MappingProxyType({}), fields=MappingProxyType(specs), price=_price(root.child("price")),
        trusted=root.child("trusted").boolean(False),
        location=root.child("location").string(required=False) or "",
    )


def _base_url(doc: _Doc) -> str:
    url = doc.string() or ""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise doc.fail(f"expected an absolute http(s) URL, got {url!r}")
    return url if url.endswith("/") else url + "/"


def _domains(doc: _Doc) -> tuple[str, ...]:
    return () if doc.value is None else doc.strings()


def _links(doc: _Doc, required: bool = True) -> dict[str, LinkSpec]:
    if doc.value is None and not required:
        return {}
    doc.mapping(set(LINK_KINDS))
    if doc.value.get("product") is None:
        raise doc.fail("needs a 'product' link kind (which links lead to product pages)")
    links = {}
    for kind in LINK_KINDS:
        if doc.value.get(kind) is not None:
            child = doc.child(kind)
            priority = child.child("priority").integer(0) if isinstance(child.value, dict) else 0
            links[kind] = LinkSpec(kind, _selectors(child), priority)
    return links


def _fields(doc: _Doc, structured: str | None) -> dict[str, FieldSpec]:
    if structured and doc.value is None:
        doc = _Doc(doc.path, doc.key, {})
    doc.mapping(set(FIELD_NAMES))
    missing = [name for name in REQUIRED_FIELDS if doc.value.get(name) is None]
    if missing and not structured:
        raise doc.fail(f"required field is missing (needed: {list(REQUIRED_FIELDS)}; or say "
                       f"'structured: schema.org' to read fields from the page's markup)", f"{doc.key}.{missing[0]}")
    fields = {}
    if structured:  # in FIELD_NAMES order; the profile's own specs replace these below
        fields = {name: schema_org.default_field(name, name in REQUIRED_FIELDS) for name in FIELD_NAMES}
    for name, value in doc.value.items():
        child = doc.child(name)
        options = value if isinstance(value, dict) else {}
        split = child.child("split").strings() if options.get("split") is not None else ()
        if split and name not in MANY_FIELDS:
            raise child.fail(f"'split' only applies to {list(MANY_FIELDS)}", f"{child.key}.split")
        required = _Doc(doc.path, f"{child.key}.required", options.get("required")).boolean(
            name in REQUIRED_FIELDS)
        fields[name] = FieldSpec(name, _selectors(child, SELECTOR_KINDS), required, split)
    return fields


def _price(doc: _Doc) -> PriceSpec:
    """``price: {default_currency, decimal_separator, thousands_separator, range, currency_symbols,
    currencies: {GBP: {decimal_separator, thousands_separator, range}}}``"""
    if doc.value is None:
        return PriceSpec()
    rule_keys = {"decimal_separator", "thousands_separator", "range"}
    spec = doc.mapping({"default_currency", "currency_symbols", "currencies", *rule_keys})
    currency = doc.child("default_currency").string(required=False)
    if currency is not None:
        _iso(doc.child("default_currency"), currency)
    symbols = spec.get("currency_symbols") or {}
    if not isinstance(symbols, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and len(v) == 3 for k, v in symbols.items()
    ):
        raise doc.fail("expected a mapping of symbol → ISO code, e.g. {'$': USD}",
                       f"{doc.key}.currency_symbols")
    currencies = doc.child("currencies")
    rules = {}
    for code in (currencies.mapping() if currencies.value is not None else {}):
        child = currencies.child(str(code))
        _iso(child, str(code))
        child.mapping(rule_keys)
        rules[str(code)] = _price_rule(child)
    return PriceSpec(currency, _price_rule(doc), MappingProxyType(rules), MappingProxyType(dict(symbols)))


def _iso(doc: _Doc, code: str) -> None:
    if not (len(code) == 3 and code.isalpha() and code.isupper()):
        raise doc.fail(f"expected an ISO 4217 code such as EUR, got {code!r}")


def _price_rule(doc: _Doc) -> PriceRule:
    decimal = doc.child("decimal_separator").string(required=False)
    if decimal is not None and decimal not in DECIMAL_SEPARATORS:
        raise doc.fail(f"expected one of {list(DECIMAL_SEPARATORS)}, got {decimal!r}", f"{doc.key}.decimal_separator")
    thousands = doc.child("thousands_separator").value
    if thousands is not None and (thousands not in THOUSANDS_SEPARATORS or thousands == decimal):
        raise doc.fail(f"expected one of {list(THOUSANDS_SEPARATORS)}, not the decimal separator, got {thousands!r}",
                       f"{doc.key}.thousands_separator")
    bounds = doc.child("range").value
    if bounds is None:
        return PriceRule(decimal, thousands)
    try:
        low, high = (Decimal(str(b)) for b in bounds) if isinstance(bounds, list) and len(bounds) == 2 else (None, None)
    except InvalidOperation:
        low = high = None
    if low is None or high is None or not Decimal(0) <= low < high:
        raise doc.fail(f"expected [lowest, highest] with 0 <= lowest < highest, got {bounds!r}", f"{doc.key}.range")
    return PriceRule(decimal, thousands, (low, high))


def with_base_url(profile: Profile, base_url: str) -> Profile:
    """The profile pointed at another copy of the shop (``-a base_url=...``)."""
    url = _base_url(_Doc(profile.path, "base_url (-a base_url)", base_url))
    return replace(profile, base_url=url, allowed_domains=())
