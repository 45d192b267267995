"""Product database models (SQLAlchemy 2 declarative, typed).

Natural keys: entities by ``name_key`` (see ``recordhound.text.name_key``), releases by
``natural_key`` (label + catalogue number, or artists + title + year), offers by
(source, external id). Alembic migrations in ``db/migrations`` create exactly this schema.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, Numeric, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAME_LEN = 300
KEY_LEN = 512
BARCODE_LEN = 14


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, datetime: DateTime(timezone=True)}


class Source(Base):
    __tablename__ = "sources"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    kind: Mapped[str] = mapped_column(String(20))
    location: Mapped[str] = mapped_column(Text)  # base URL or file path
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", default=dict)

    def __str__(self) -> str:
        return self.name


class SourceSpelling(Base):
    """A spelling a source used for an artist, label or style, and the entity it was matched with
    (or created as). One row per spelling, so a crawl that meets a new name adds a row instead of
    rewriting every name the source ever used (migration 0010 moved them out of ``sources.metadata``)."""

    __tablename__ = "source_spellings"

    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10), primary_key=True)  # artist, label or style
    spelling: Mapped[str] = mapped_column(String(NAME_LEN), primary_key=True)
    entity_id: Mapped[int] = mapped_column(Integer)  # artists.id, labels.id or styles.id, by kind


class _Entity:
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LEN))
    name_key: Mapped[str] = mapped_column(String(NAME_LEN), unique=True)


class Artist(_Entity, Base):
    __tablename__ = "artists"
    synonyms: Mapped[list[ArtistSynonym]] = relationship(viewonly=True, order_by="ArtistSynonym.spelling")

    def __str__(self) -> str:
        return self.name


class Label(_Entity, Base):
    __tablename__ = "labels"
    synonyms: Mapped[list[LabelSynonym]] = relationship(viewonly=True, order_by="LabelSynonym.spelling")

    def __str__(self) -> str:
        return self.name


class Style(_Entity, Base):
    __tablename__ = "styles"
    synonyms: Mapped[list[StyleSynonym]] = relationship(viewonly=True, order_by="StyleSynonym.spelling")

    def __str__(self) -> str:
        return self.name


class _Synonym:
    id: Mapped[int] = mapped_column(primary_key=True)
    spelling: Mapped[str] = mapped_column(String(NAME_LEN), unique=True)

    def __str__(self) -> str:
        return self.spelling


class ArtistSynonym(_Synonym, Base):
    __tablename__ = "artist_synonyms"
    artist_id: Mapped[int] = mapped_column(ForeignKey("artists.id"), index=True)


class LabelSynonym(_Synonym, Base):
    __tablename__ = "label_synonyms"
    label_id: Mapped[int] = mapped_column(ForeignKey("labels.id"), index=True)


class StyleSynonym(_Synonym, Base):
    __tablename__ = "style_synonyms"
    style_id: Mapped[int] = mapped_column(ForeignKey("styles.id"), index=True)


class Release(Base):
    __tablename__ = "releases"
    __table_args__ = (Index("ix_releases_title_year", "title", "year"),)  # migration 0011

    id: Mapped[int] = mapped_column(primary_key=True)
    natural_key: Mapped[str] = mapped_column(String(KEY_LEN), unique=True)
    title: Mapped[str] = mapped_column(String(NAME_LEN))  # matching by artists + title + year: ix_releases_title_year
    label_id: Mapped[int | None] = mapped_column(ForeignKey("labels.id"), index=True)
    catalog_number: Mapped[str | None] = mapped_column(String(100))
    year: Mapped[int | None] = mapped_column(Integer)
    barcode: Mapped[str | None] = mapped_column(String(BARCODE_LEN), index=True)  # GTIN-8/12/13/14, digits only
    country: Mapped[str | None] = mapped_column(String(100))
    # title + year + ordered artist ids, digested (db/releases.names_key): matching's last step
    names_key: Mapped[str | None] = mapped_column(String(32), index=True)  # migration 0012
    # read-only navigation for the admin (writes go through db/releases.py)
    label: Mapped[Label | None] = relationship(viewonly=True)
    artists: Mapped[list[Artist]] = relationship(secondary="release_artists", viewonly=True,
                                                 order_by="ReleaseArtist.position")
    styles: Mapped[list[Style]] = relationship(secondary="release_styles", viewonly=True)
    catalog_numbers: Mapped[list[ReleaseCatno]] = relationship(viewonly=True, order_by="ReleaseCatno.position")
    offers: Mapped[list[Offer]] = relationship(viewonly=True)

    def __str__(self) -> str:
        return self.title


class ReleaseArtist(Base):
    __tablename__ = "release_artists"

    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), primary_key=True)
    artist_id: Mapped[int] = mapped_column(ForeignKey("artists.id"), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(Integer)


class ReleaseCatno(Base):
    """Every catalogue number of a release (a reissue may carry two labels' numbers), in the order
    the shop printed them; ``releases.catalog_number`` keeps the first. ``catno_key`` is the
    matching key ("ABC-00012" = "abc 00012")."""

    __tablename__ = "release_catnos"

    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    catalog_number: Mapped[str] = mapped_column(String(100))
    catno_key: Mapped[str] = mapped_column(String(100), index=True)


class ReleaseStyle(Base):
    __tablename__ = "release_styles"

    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), primary_key=True)
    style_id: Mapped[int] = mapped_column(ForeignKey("styles.id"), primary_key=True, index=True)


class Offer(Base):
    __tablename__ = "offers"
    __table_args__ = (UniqueConstraint("source_id", "external_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id"))
    external_id: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(Text)
    release_id: Mapped[int] = mapped_column(ForeignKey("releases.id"), index=True)
    price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    currency: Mapped[str | None] = mapped_column(String(3))
    in_stock: Mapped[bool | None]  # availability == "in_stock" (kept for readers of the first schema)
    availability: Mapped[str | None] = mapped_column(String(20))  # in_stock | sold_out | pre_order
    format: Mapped[str | None] = mapped_column(String(40))  # LP, 2xLP, 12", 7", CD, Cassette, Box Set, Digital
    condition: Mapped[str | None] = mapped_column(String(10))  # new | used
    media_grade: Mapped[str | None] = mapped_column(String(10))  # Goldmine: M, NM, VG+, VG, G+, G, F, P
    sleeve_grade: Mapped[str | None] = mapped_column(String(10))
    barcode: Mapped[str | None] = mapped_column(String(BARCODE_LEN), index=True)
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]
    release: Mapped[Release] = relationship(viewonly=True)
    source: Mapped[Source] = relationship(viewonly=True)
    history: Mapped[list[OfferHistory]] = relationship(viewonly=True, order_by="OfferHistory.changed_at")

    def __str__(self) -> str:
        return f"{self.external_id} ({self.price} {self.currency or ''})".strip()


class OfferHistory(Base):
    __tablename__ = "offer_history"

    id: Mapped[int] = mapped_column(primary_key=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("offers.id"), index=True)
    old_price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    new_price: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    old_currency: Mapped[str | None] = mapped_column(String(3))
    new_currency: Mapped[str | None] = mapped_column(String(3))
    changed_at: Mapped[datetime]

    def __str__(self) -> str:
        return f"{self.changed_at:%Y-%m-%d %H:%M}: {self.old_price} → {self.new_price} {self.new_currency or ''}"


class StockChange(Base):
    """One availability transition of an offer (sold_out → in_stock is "back in stock")."""

    __tablename__ = "stock_changes"

    id: Mapped[int] = mapped_column(primary_key=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("offers.id"), index=True)
    old_availability: Mapped[str | None] = mapped_column(String(20))
    new_availability: Mapped[str | None] = mapped_column(String(20))
    changed_at: Mapped[datetime]


class CrawlSample(Base):
    """A crawl's running totals at one moment (the store pipeline writes one every progress
    interval and one when the crawl ends); ``health_error`` is set on the last sample of a
    crawl that failed its health checks. The admin's crawl-rate chart is drawn from these."""

    __tablename__ = "crawl_samples"

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id"), index=True)
    at: Mapped[datetime]
    pages: Mapped[int] = mapped_column(Integer, default=0)
    items: Mapped[int] = mapped_column(Integer, default=0)
    stored: Mapped[int] = mapped_column(Integer, default=0)
    finished: Mapped[bool] = mapped_column(default=False)
    health_error: Mapped[str | None] = mapped_column(Text)


class AlertRule(Base):
    """Tell ``notify`` (an Apprise URL) about changes of one kind within a scope (source, release
    or offer; none: everything). Only changes after ``after_id`` (of the kind's event table)
    are looked at; the planner moves it forward. A removed rule is kept for its deliveries."""

    __tablename__ = "alert_rules"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))  # price_below | price_drop | back_in_stock | crawl_failed
    source_id: Mapped[int | None] = mapped_column(ForeignKey("sources.id"))
    release_id: Mapped[int | None] = mapped_column(ForeignKey("releases.id"))
    offer_id: Mapped[int | None] = mapped_column(ForeignKey("offers.id"))
    threshold: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))  # a price, or a percent
    currency: Mapped[str | None] = mapped_column(String(3))
    notify: Mapped[str] = mapped_column(Text)
    after_id: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    removed_at: Mapped[datetime | None]


class AlertDelivery(Base):
    """One alert for one change under one rule (unique: it is planned once), with its outcome."""

    __tablename__ = "alert_deliveries"
    __table_args__ = (UniqueConstraint("rule_id", "event_kind", "event_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    rule_id: Mapped[int] = mapped_column(ForeignKey("alert_rules.id"), index=True)
    event_kind: Mapped[str] = mapped_column(String(20))  # price | stock | crawl
    event_id: Mapped[int] = mapped_column(Integer)
    dedupe_key: Mapped[str] = mapped_column(String(100), unique=True)
    title: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(10), index=True)  # pending | sending | sent | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]


class AdminUser(Base):
    """A login of the web admin (``recordhound admin create-user``); never a scraped value."""

    __tablename__ = "admin_users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    password_hash: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[datetime]
    session_epoch: Mapped[int] = mapped_column(default=0, server_default="0")  # bumped: every session ends
