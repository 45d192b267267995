"""Item classes (dataclasses, so itemadapter and feed exports handle them).

The spider yields a :class:`RawRelease` (strings exactly as the page had them); the
normalize pipeline turns it into a :class:`Release` (typed, cleaned) or drops it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from recordhound.text import split_catalog_numbers


@dataclass
class FieldProblem:
    """A field that could not be parsed, recorded on the item with where it came from."""

    field: str
    reason: str
    url: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason} ({self.url})"


@dataclass
class RawOffer:
    """One format / condition a product page sells, strings as the page had them."""

    external_id: str | None = None  # the shop's own id for this variant
    format: str | None = None
    condition: str | None = None
    media_grade: str | None = None
    sleeve_grade: str | None = None
    price: str | None = None
    currency: str | None = None
    availability: str | None = None
    barcode: str | None = None
    url: str | None = None  # when the variant has a page of its own
    machine_price: bool = False  # the price is a machine-readable number (schema.org, meta content)


@dataclass
class RawRelease:
    source: str
    url: str
    external_id: str | None = None
    title: str | None = None
    artists: list[str] = field(default_factory=list)
    label: str | None = None
    catalog_number: str | None = None
    year: str | None = None
    styles: list[str] = field(default_factory=list)
    price: str | None = None
    currency: str | None = None
    in_stock: str | None = None
    line: int | None = None  # file sources: the 1-based line (data row) the item came from
    structured: list[str] = field(default_factory=list)  # fields read from the page's structured data
    text_id: str | None = None  # an article number read from visible text: reported, never a storage key
    barcode: str | None = None
    country: str | None = None
    format: str | None = None
    condition: str | None = None
    offers: list[RawOffer] = field(default_factory=list)  # several formats / conditions on one page


@dataclass
class Offer:
    """One offer of a release at a shop: a format in a condition, with its own price and stock."""

    external_id: str
    url: str
    format: str | None = None
    condition: str | None = None  # "new" | "used"
    media_grade: str | None = None
    sleeve_grade: str | None = None
    price: Decimal | None = None
    currency: str | None = None
    availability: str | None = None  # "in_stock" | "sold_out" | "pre_order"
    barcode: str | None = None

    @property
    def in_stock(self) -> bool | None:
        return None if self.availability is None else self.availability == "in_stock"


@dataclass
class Release:
    source: str
    url: str
    external_id: str
    title: str
    artists: list[str]
    label: str | None = None
    catalog_number: str | None = None
    year: int | None = None
    styles: list[str] = field(default_factory=list)
    price: Decimal | None = None
    currency: str | None = None
    in_stock: bool | None = None
    problems: list[FieldProblem] = field(default_factory=list)
    line: int | None = None
    barcode: str | None = None
    country: str | None = None
    availability: str | None = None
    format: str | None = None
    condition: str | None = None
    offers: list[Offer] = field(default_factory=list)  # empty: the page is one offer (the fields above)
    catalog_numbers: list[str] = field(default_factory=list)  # all of them; ``catalog_number`` is the first

    def numbers(self) -> list[str]:
        """Every catalogue number of the release ("FLD001 / CAT-2" is two), the first first."""
        return self.catalog_numbers or split_catalog_numbers(self.catalog_number)

    def all_offers(self) -> list[Offer]:
        """The offers to store: the page's several offers, or the page itself as one."""
        if self.offers:
            return self.offers
        availability = self.availability or (None if self.in_stock is None else
                                             "in_stock" if self.in_stock else "sold_out")
        return [Offer(self.external_id, self.url, self.format, self.condition, None, None, self.price,
                      self.currency, availability, self.barcode)]

    def release_barcode(self) -> str | None:
        return self.barcode or next((o.barcode for o in self.offers if o.barcode), None)


@dataclass
class Unchanged:
    """A product page that answered 304 Not Modified to a recheck: its offers were seen again."""

    source: str
    url: str
