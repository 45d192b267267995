"""Validate a parsed profile document and build a :class:`Profile`.

Every error names the profile file and the dotted key, and says what was expected.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any
from urllib.parse import urlparse

from lxml import etree
from parsel.csstranslator import HTMLTranslator

from recordhound.exceptions import ProfileError
from recordhound.sources.profile import (
    FIELD_NAMES,
    FILE_KINDS,
    LINK_KINDS,
    MANY_FIELDS,
    REQUIRED_FIELDS,
    FieldSpec,
    LinkSpec,
    RENDER_KINDS,
    PriceSpec,
    Profile,
    RenderSpec,
    SelectorSpec,
)

TOP_KEYS = {"name", "kind", "base_url", "start_urls", "links", "fields", "price", "trusted", "allowed_domains",
            "render"}
FILE_KEYS = {"name", "kind", "location", "fields", "price", "trusted"}
KINDS = ("html", *FILE_KINDS)
_CSS = HTMLTranslator()


class _Doc:
    """A mapping being validated, with the file and dotted key it came from."""

    def __init__(self, path: str, key: str, value: Any) -> None:
        self.path, self.key, self.value = path, key, value

    def fail(self, problem: str, key: str | None = None) -> ProfileError:
        return ProfileError(self.path, key or self.key or "(top level)", problem)

    def child(self, name: str) -> _Doc:
        return _Doc(self.path, f"{self.key}.{name}" if self.key else name, self.value.get(name))

    def mapping(self, allowed: set[str] | None = None) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.fail(f"expected a mapping, got {type(self.value).__name__}")
        unknown = sorted(set(map(str, self.value)) - allowed) if allowed is not None else []
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r}; expected one of {sorted(allowed or ())}",
                            f"{self.key}.{unknown[0]}" if self.key else unknown[0])
        return self.value

    def string(self, *, required: bool = True) -> str | None:
        if self.value is None and not required:
            return None
        if not isinstance(self.value, str) or not self.value.strip():
            raise self.fail(f"expected a non-empty string, got {self.value!r}")
        return self.value

    def strings(self) -> tuple[str, ...]:
        items = [self.value] if isinstance(self.value, str) else self.value
        if not isinstance(items, list) or not items or not all(isinstance(i, str) and i for i in items):
            raise self.fail(f"expected a string or a non-empty list of strings, got {self.value!r}")
        return tuple(items)

    def integer(self, default: int) -> int:
        if self.value is None:
            return default
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.fail(f"expected a whole number, got {self.value!r}")
        return self.value

    def boolean(self, default: bool) -> bool:
        if self.value is None:
            return default
        if not isinstance(self.value, bool):
            raise self.fail(f"expected true or false, got {self.value!r}")
        return self.value


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
    return Profile(
        name=root.child("name").string() or "",
        path=path,
        kind=kind,
        base_url=base_url,
        start_urls=root.child("start_urls").strings(),
        links=MappingProxyType(_links(root.child("links"))),
        fields=MappingProxyType(_fields(root.child("fields"))),
        price=_price(root.child("price")),
        allowed_domains=_domains(root.child("allowed_domains")),
        trusted=root.child("trusted").boolean(False),
        render=MappingProxyType(_render(root.child("render"))),
    )


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


def _selectors(doc: _Doc) -> tuple[SelectorSpec, ...]:
    """``"css"`` shorthand, or a mapping with ``css`` and/or ``xpath`` (string or list)."""
    if isinstance(doc.value, str):
        return (_checked(doc, "css", doc.value),)
    spec = doc.mapping({"css", "xpath", "priority", "required", "split"})
    found: list[SelectorSpec] = []
    for kind in ("css", "xpath"):
        if spec.get(kind) is not None:
            found += [_checked(doc.child(kind), kind, q) for q in doc.child(kind).strings()]
    if not found:
        raise doc.fail("needs a selector: a css or xpath key")
    return tuple(found)


def _checked(doc: _Doc, kind: str, query: str) -> SelectorSpec:
    try:
        if kind == "css":
            _CSS.css_to_xpath(query)
        else:
            etree.XPath(query)
    except Exception as exc:  # cssselect and lxml raise several unrelated types
        raise doc.fail(f"invalid {kind} selector {query!r}: {exc}") from exc
    return SelectorSpec(kind, query)


def _links(doc: _Doc) -> dict[str, LinkSpec]:
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


def _fields(doc: _Doc) -> dict[str, FieldSpec]:
    doc.mapping(set(FIELD_NAMES))
    missing = [name for name in REQUIRED_FIELDS if doc.value.get(name) is None]
    if missing:
        raise doc.fail(f"required field is missing (needed: {list(REQUIRED_FIELDS)})",
                       f"{doc.key}.{missing[0]}")
    fields = {}
    for name, value in doc.value.items():
        child = doc.child(name)
        options = value if isinstance(value, dict) else {}
        split = child.child("split").strings() if options.get("split") is not None else ()
        if split and name not in MANY_FIELDS:
            raise child.fail(f"'split' only applies to {list(MANY_FIELDS)}", f"{child.key}.split")
        required = _Doc(doc.path, f"{child.key}.required", options.get("required")).boolean(
            name in REQUIRED_FIELDS)
        fields[name] = FieldSpec(name, _selectors(child), required, split)
    return fields


def _price(doc: _Doc) -> PriceSpec:
    if doc.value is None:
        return PriceSpec()
    spec = doc.mapping({"default_currency", "decimal_separator", "currency_symbols"})
    currency = doc.child("default_currency").string(required=False)
    if currency is not None and not (len(currency) == 3 and currency.isalpha() and currency.isupper()):
        raise doc.fail(f"expected an ISO 4217 code such as EUR, got {currency!r}",
                       f"{doc.key}.default_currency")
    separator = doc.child("decimal_separator").string(required=False)
    if separator is not None and separator not in (".", ","):
        raise doc.fail(f"expected '.' or ',', got {separator!r}", f"{doc.key}.decimal_separator")
    symbols = spec.get("currency_symbols") or {}
    if not isinstance(symbols, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and len(v) == 3 for k, v in symbols.items()
    ):
        raise doc.fail("expected a mapping of symbol → ISO code, e.g. {'$': USD}",
                       f"{doc.key}.currency_symbols")
    return PriceSpec(currency, separator, MappingProxyType(dict(symbols)))


def with_base_url(profile: Profile, base_url: str) -> Profile:
    """The profile pointed at another copy of the shop (``-a base_url=...``)."""
    url = _base_url(_Doc(profile.path, "base_url (-a base_url)", base_url))
    return replace(profile, base_url=url, allowed_domains=())
