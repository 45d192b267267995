"""The demo shop's catalog: every product, price and fault derived from (seed, releases, epoch)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from recordhound.demo import names

USED_COPY_EVERY = 25  # every 25th release also has a second-hand offer (same release, new SKU)
FAULTS = {2: "no_price", 3: "flaky", 4: "broken_html", 5: "non_utf8"}
MIN_RELEASES = 20
CURRENCY_FORMATS = (  # (weight, currency, format name)
    (33, "EUR", "eur_symbol"), (14, "EUR", "eur_code"), (8, "EUR", "eur_suffix"),
    (30, "USD", "usd"), (15, "RUB", "rub"),
)


@dataclass(frozen=True)
class Product:
    sku: str
    path: str
    release: int
    title: str
    artists: tuple[str, ...]  # spellings as printed
    artist_ids: tuple[int, ...]  # canonical entities behind them
    artists_joined: bool  # printed as "A / B" in one element instead of one link each
    label: str
    label_id: int
    catno: str
    year: int
    styles: tuple[str, ...]
    style_ids: tuple[int, ...]
    currency: str
    price_format: str
    base_cents: int
    in_stock: bool
    fault: str | None = None


class Catalog:
    """Deterministic: the same (seed, releases, epoch) always gives the same shop."""

    def __init__(self, releases: int, seed: int = 1, epoch: int = 0) -> None:
        if releases < MIN_RELEASES:
            raise ValueError(f"the demo shop needs at least {MIN_RELEASES} releases, got {releases}")
        if epoch < 0:
            raise ValueError(f"epoch must be 0 or more, got {epoch}")
        self.releases, self.seed, self.epoch = releases, seed, epoch
        rng = random.Random(f"recordhound-demo:{seed}")
        reserved = [spelling for group in names.VARIANT_ARTISTS for spelling in group]
        self.artist_names = [group[0] for group in names.VARIANT_ARTISTS] + [names.NON_UTF8_ARTIST]
        self.artist_names += names.unique_names(rng, max(8, releases // 3), names.artist_name, reserved)
        self.label_names = names.unique_names(rng, max(4, releases // 15), names.label_name)
        self.style_names = [group[0] for group in names.STYLES]
        self.products = self._build(rng)
        self.rejected = _rejected_product()
        self.unstorable = _unstorable_products(self.products[0])

    def _build(self, rng: random.Random) -> list[Product]:
        products = []
        for index in range(self.releases):
            product = self._release(rng, index)
            products.append(product)
            if index % USED_COPY_EVERY == USED_COPY_EVERY - 1:
                products.append(_used_copy(rng, product))
        return products

    def _release(self, rng: random.Random, index: int) -> Product:
        artist_ids, spellings = self._artists(rng, index)
        style_ids = tuple(sorted(rng.sample(range(len(names.STYLES)), rng.choice((1, 1, 2, 2, 3)))))
        label_id = rng.randrange(len(self.label_names))
        weight = rng.randrange(100)
        currency, price_format = next(
            (c, f) for w, c, f in _cumulative(CURRENCY_FORMATS) if weight < w
        )
        fault = FAULTS.get(index)
        title = names.NON_UTF8_TITLE if fault == "non_utf8" else names.release_title(rng)
        return Product(
            sku=f"DR-{index:06d}",
            path=f"/release/{index:06d}-{slug(title)}",
            release=index,
            title=title,
            artists=spellings,
            artist_ids=artist_ids,
            artists_joined=len(artist_ids) > 1 and rng.random() < 0.5,
            label=self.label_names[label_id],
            label_id=label_id,
            catno=f"{_prefix(self.label_names[label_id])}-{index:05d}",
            year=rng.randint(1965, 2025),
            styles=tuple(rng.choice(names.STYLES[i]) for i in style_ids),
            style_ids=style_ids,
            currency=currency,
            price_format=price_format,
            base_cents=_base_cents(rng, currency),
            in_stock=rng.random() < 0.8,
            fault=fault,
        )

    def _artists(self, rng: random.Random, index: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
        variants = names.VARIANT_ARTISTS
        flat = [(i, s) for i, group in enumerate(variants) for s in group]
        if 8 <= index < 8 + len(flat):  # every variant spelling appears at least once
            artist_id, spelling = flat[index - 8]
            return (artist_id,), (spelling,)
        if FAULTS.get(index) == "non_utf8":
            return (len(variants),), (names.NON_UTF8_ARTIST,)
        count = rng.choices((1, 2, 3), weights=(80, 15, 5))[0]
        ids = tuple(dict.fromkeys(self._artist_id(rng) for _ in range(count)))
        return ids, tuple(self._spelling(rng, i) for i in ids)

    def _artist_id(self, rng: random.Random) -> int:
        if rng.random() < 0.03:
            return rng.randrange(len(names.VARIANT_ARTISTS))
        return rng.randrange(len(names.VARIANT_ARTISTS) + 1, len(self.artist_names))

    def _spelling(self, rng: random.Random, artist_id: int) -> str:
        if artist_id < len(names.VARIANT_ARTISTS):
            return rng.choice(names.VARIANT_ARTISTS[artist_id])
        return self.artist_names[artist_id]

    @cached_property
    def by_path(self) -> dict[str, Product]:
        return {p.path: p for p in [*self.products, self.rejected, *self.unstorable]}

    def cents(self, product: Product, epoch: int | None = None) -> int | None:
        """The price in minor units at ``epoch`` (default: this catalog's), None for no price."""
        if product.fault == "no_price":
            return None
        cents = product.base_cents
        for step in range(1, (self.epoch if epoch is None else epoch) + 1):
            cents = round(cents * (100 + _change_percent(self.seed, product.sku, step)) / 100)
        return cents

    def price(self, product: Product, epoch: int | None = None) -> Decimal | None:
        cents = self.cents(product, epoch)
        return None if cents is None else (Decimal(cents) / 100).quantize(Decimal("0.01"))


def is_hot(seed: int, sku: str) -> bool:
    """About one offer in ten is "hot": its price changes in most epochs (the rest rarely do),
    so a recrawl schedule that adapts to change has something to learn."""
    return random.Random(f"hot:{seed}:{sku}").random() < 0.1


def _change_percent(seed: int, sku: str, epoch: int) -> int:
    """0 for most offers, per epoch: a hot offer changes by ±1-4 % with chance 0.4 and by ±10-30 %
    with 0.2; any other by ±1-4 % with 0.03 and ±10-30 % with 0.02 (about 10 % of all offers)."""
    rng = random.Random(f"price:{seed}:{sku}:{epoch}")
    roll, sign = rng.random(), rng.choice((1, -1))
    small, large = (0.4, 0.6) if is_hot(seed, sku) else (0.03, 0.05)
    if roll < small:
        return sign * rng.randint(1, 4)
    if roll < large:
        return sign * rng.choice((10, 15, 20, 25, 30))
    return 0


def _cumulative(table: tuple[tuple[int, str, str], ...]) -> list[tuple[int, str, str]]:
    total, out = 0, []
    for weight, currency, fmt in table:
        total += weight
        out.append((total, currency, fmt))
    return out


def _base_cents(rng: random.Random, currency: str) -> int:
    if currency == "RUB":
        return rng.randint(500, 9000) * 100
    if currency == "USD" and rng.random() < 0.05:
        return rng.randint(1000, 2500) * 100 + 99  # box sets: "$1,299.99"
    return rng.randint(499, 5999)


def _used_copy(rng: random.Random, original: Product) -> Product:
    number = original.catno.rsplit("-", 1)
    return Product(
        **{**original.__dict__,
           "sku": f"{original.sku}-U",
           "path": f"{original.path}-used",
           "catno": f"{number[0]} {number[1]}",  # "ABC 00012": same release, other spelling
           "base_cents": max(199, original.base_cents * 6 // 10),
           "in_stock": True,
           "fault": None},
    )


def _rejected_product() -> Product:
    """A product page without a title: a correct crawl rejects it with a reason."""
    return Product(
        sku="DR-UNTITLED", path="/release/untitled", release=-1, title="", artists=("Nobody",),
        artist_ids=(), artists_joined=False, label="", label_id=-1, catno="", year=2000,
        styles=(), style_ids=(), currency="EUR", price_format="eur_symbol", base_cents=999,
        in_stock=True, fault="rejected",
    )


LONG_URL_LENGTH = 240  # longer than offers.external_id (200), which defaults to the page URL
LONG_TITLE_LENGTH = 420  # longer than releases.title (300)


BAD_BYTES_MARKER = "BADBYTES"  # served as bytes that are not UTF-8 (site.py)


def _unstorable_products(model: Product) -> list[Product]:
    """Pages whose values do not fit the product schema, and one with bytes that are not valid
    UTF-8: each is rejected with its reason, and the rest of its batch is stored (PostgreSQL
    refuses what SQLite would silently keep; a decoder would silently write U+FFFD)."""
    long_url = Product(**{**model.__dict__, "sku": "", "path": "/release/long-" + "x" * LONG_URL_LENGTH,
                          "release": -2, "title": "A Release Without A Stock Number",
                          "catno": "", "fault": "long_url"})
    long_title = ("The Longest Title " * 30)[:LONG_TITLE_LENGTH].strip()
    long_field = Product(**{**model.__dict__, "sku": "DR-LONGTITLE", "path": "/release/long-title",
                            "release": -3, "title": long_title, "catno": "", "fault": "long_field"})
    bad_bytes = Product(**{**model.__dict__, "sku": "DR-BADBYTES", "path": "/release/bad-bytes",
                           "release": -4, "title": f"Broken {BAD_BYTES_MARKER} Bytes", "catno": "",
                           "artists": (f"Art{BAD_BYTES_MARKER}ist",), "fault": "invalid_bytes"})
    return [long_url, long_field, bad_bytes]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "release"


def _prefix(label: str) -> str:
    letters = [ch for ch in label.upper() if ch.isalpha()]
    return "".join(letters[:3]).ljust(3, "X")


change_percent = _change_percent  # the platform-like sections' prices move by the same rule
