"""The shape of a source profile, as frozen dataclasses (built by ``schema.build_profile``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

from recordhound.prices import PriceRule
from recordhound.sources.title_rules import TitleRule

LINK_KINDS = ("pagination", "listing", "product")
FILE_KINDS = ("csv", "xlsx", "json")
RENDER_KINDS = ("start", *LINK_KINDS)  # "start": the start_urls
FIELD_NAMES = (
    "external_id", "title", "artists", "label", "catalog_number",
    "year", "styles", "price", "currency", "in_stock", "barcode", "format", "condition", "country",
)
REQUIRED_FIELDS = ("title", "artists")
IDENTIFIERS = ("barcode", "format", "condition", "country")  # a shop may never print them: not a broken selector
MANY_FIELDS = ("artists", "styles")
OFFER_FIELDS = ("external_id", "format", "condition", "media_grade", "sleeve_grade", "price", "currency",
                "availability", "barcode", "url")
STRUCTURED_KINDS = ("jsonld", "microdata", "opengraph", "rdfa")  # JMESPath over extruct's output
SELECTOR_KINDS = ("css", "xpath", *STRUCTURED_KINDS)


@dataclass(frozen=True)
class SelectorSpec:
    """One selector: ``kind`` is "css", "xpath", a structured-data syntax with a JMESPath
    ``query`` (:data:`STRUCTURED_KINDS`), or "column" in a file source."""

    kind: str
    query: str
    machine: bool = False  # the value is machine-readable (a meta tag's content): prices use "." for decimals

    def describe(self) -> str:
        return f"{self.kind}:{self.query}"


@dataclass(frozen=True)
class FieldSpec:
    name: str
    selectors: tuple[SelectorSpec, ...]
    required: bool = False
    split: tuple[str, ...] = ()


@dataclass(frozen=True)
class LinkSpec:
    kind: str
    selectors: tuple[SelectorSpec, ...]
    priority: int


@dataclass(frozen=True)
class PriceSpec:
    default_currency: str | None = None
    rule: PriceRule = PriceRule()  # for every currency
    currencies: Mapping[str, PriceRule] = field(default_factory=lambda: MappingProxyType({}))
    currency_symbols: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def rule_for(self, currency: str) -> PriceRule:
        own = self.currencies.get(currency)
        return own.over(self.rule) if own else self.rule


@dataclass(frozen=True)
class RenderSpec:
    """Render this link kind's pages in a browser, waiting for a CSS selector (or the load event)."""

    wait_for: str | None = None
    timeout: float = 15.0  # seconds

    def meta(self) -> dict[str, object]:
        """Plain JSON for the request's meta (the frontier stores requests as JSON)."""
        return {"wait_for": self.wait_for, "timeout_ms": int(self.timeout * 1000)}


@dataclass(frozen=True)
class RetrySpec:
    """A profile's ``retry:``; None keeps the ``RECORDHOUND_RETRY_*`` setting."""

    base_seconds: float | None = None
    cap_seconds: float | None = None
    max_attempts: int | None = None
    http_codes: tuple[int, ...] = ()  # transient besides the setting's codes


@dataclass(frozen=True)
class PolitenessSpec:
    """A profile's ``politeness:`` per host, shared by every node; None keeps the setting."""

    requests_per_second: float | None = None
    concurrency: int | None = None


@dataclass(frozen=True)
class RecrawlSpec:
    """A profile's ``recrawl:``: seconds between fetches per link kind ("listing" includes the
    start URLs); with ``min``/``max`` the interval adapts to how often the page changes."""

    intervals: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    min_seconds: float | None = None
    max_seconds: float | None = None

    @property
    def active(self) -> bool:
        return bool(self.intervals)

    @property
    def adaptive(self) -> bool:
        return self.min_seconds is not None or self.max_seconds is not None


@dataclass(frozen=True)
class HealthSpec:
    max_failed_share: float | None = None  # None: RECORDHOUND_HEALTH_MAX_FAILED_SHARE


@dataclass(frozen=True)
class OffersSpec:
    """A profile's ``offers:``: each element ``each`` finds is one offer; its fields' selectors
    (CSS or XPath) are relative to that element."""

    each: SelectorSpec
    fields: Mapping[str, tuple[SelectorSpec, ...]]


@dataclass(frozen=True)
class SitemapSpec:
    """A profile's ``sitemap:``: sitemap (or sitemap index) URLs, or robots.txt's ``Sitemap:``
    lines; product pages are the URLs that match ``follow`` and none of ``deny`` (regexes)."""

    urls: tuple[str, ...] = ()  # empty: the Sitemap: lines of the shop's robots.txt
    follow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    only: bool = False  # no start URLs crawled: every product comes from the sitemaps


@dataclass(frozen=True)
class RobotsSpec:
    """A profile's ``robots:``; obeying robots.txt is the default (``ROBOTSTXT_OBEY``)."""

    obey: bool = True
    reason: str = ""  # required when obey is false; logged at the start of every crawl


@dataclass(frozen=True)
class Profile:
    name: str
    path: str
    kind: str
    base_url: str
    start_urls: tuple[str, ...]
    links: Mapping[str, LinkSpec]
    fields: Mapping[str, FieldSpec]
    price: PriceSpec
    allowed_domains: tuple[str, ...] = ()
    trusted: bool = False
    location: str = ""  # file sources: the file's path
    render: Mapping[str, RenderSpec] = field(default_factory=lambda: MappingProxyType({}))
    structured: str | None = None  # "schema.org": unnamed fields come from the page's markup
    retry: RetrySpec = RetrySpec()
    politeness: PolitenessSpec = PolitenessSpec()
    health: HealthSpec = HealthSpec()
    recrawl: RecrawlSpec = RecrawlSpec()
    offers: OffersSpec | None = None
    title_rules: tuple[TitleRule, ...] = ()
    sitemap: SitemapSpec | None = None
    robots: RobotsSpec = RobotsSpec()
    platform: str | None = None  # "shopify": from /products.json; "woocommerce": from the Store API
    visible_text: bool = False  # schema.org with no field named: price, id, stock also from the page's text

    @cached_property  # asked on every product page
    def structured_kinds(self) -> frozenset[str]:
        """The structured-data syntaxes any field reads (extracted once per page)."""
        return frozenset(s.kind for f in self.fields.values() for s in f.selectors if s.kind in STRUCTURED_KINDS)

    def field(self, name: str) -> FieldSpec | None:
        return self.fields.get(name)
