"""The catalog tabs: read-only lists (search, sort, pagination) and detail pages.

The product tables change only through the crawler and the apply worker, so nothing here
creates, edits or deletes rows: a reviewer's changes are review decisions.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from sqladmin import ModelView
from starlette.requests import Request

from recordhound.db.models import Artist, Label, Offer, OfferHistory, Release, Source, SourceSpelling, Style
from recordhound.db.sources import CALLS_KEY


class ReadOnly(ModelView):
    can_create: ClassVar[bool] = False
    can_edit: ClassVar[bool] = False
    can_delete: ClassVar[bool] = False
    can_export: ClassVar[bool] = False
    page_size: ClassVar[int] = 25
    page_size_options: ClassVar[list[int]] = [25, 50, 100]
    category: ClassVar[str] = "Catalog"


class WithChart(ReadOnly):
    """A detail page with a chart under the fields (templates/recordhound/details_chart.html)."""

    details_template: ClassVar[str] = "recordhound/details_chart.html"
    chart_id: ClassVar[str] = ""
    chart_title: ClassVar[str] = ""
    chart_empty: ClassVar[str] = "No data yet."

    def chart_for(self, request: Request, model: Any) -> dict[str, str]:
        return {"id": self.chart_id, "title": self.chart_title,
                "src": self.chart_src(request, model), "empty": self.chart_empty}

    def chart_src(self, request: Request, model: Any) -> str:
        raise NotImplementedError


class ReleaseAdmin(WithChart, model=Release):
    name, name_plural, icon = "Release", "Releases", "fa-solid fa-compact-disc"
    column_list = [Release.id, Release.title, Release.artists, Release.label, Release.catalog_number, Release.year]
    column_searchable_list = [Release.title, Release.catalog_number, Release.barcode]
    column_sortable_list = [Release.id, Release.title, Release.catalog_number, Release.year]
    column_default_sort = [(Release.id, False)]
    column_details_list = [Release.id, Release.title, Release.artists, Release.label, Release.catalog_number,
                           Release.barcode, Release.year, Release.country, Release.styles, Release.offers,
                           Release.natural_key]
    chart_id, chart_title = "price-chart", "Prices of every offer (all shops, all formats)"

    def chart_src(self, request: Request, model: Any) -> str:
        return str(request.url_for("admin:view-chart-release", release_id=model.id))


def _entity_admin(entity: Any, singular: str, plural: str, entity_icon: str) -> type[ModelView]:
    """Artists, labels and styles look alike: name, matching key, synonyms."""
    class EntityAdmin(ReadOnly, model=entity):
        name, name_plural, icon = singular, plural, entity_icon
        column_list = [entity.id, entity.name, entity.name_key]
        column_searchable_list = [entity.name, entity.name_key]
        column_sortable_list = [entity.id, entity.name]
        column_default_sort = [(entity.id, False)]
        column_details_list = [entity.id, entity.name, entity.name_key, entity.synonyms]

    return EntityAdmin


ArtistAdmin = _entity_admin(Artist, "Artist", "Artists", "fa-solid fa-user")
LabelAdmin = _entity_admin(Label, "Label", "Labels", "fa-solid fa-tag")
StyleAdmin = _entity_admin(Style, "Style", "Styles", "fa-solid fa-music")


class OfferAdmin(WithChart, model=Offer):
    name, name_plural, icon = "Offer", "Offers", "fa-solid fa-euro-sign"
    column_list = [Offer.id, Offer.external_id, Offer.release, Offer.source, Offer.format, Offer.condition,
                   Offer.price, Offer.currency, Offer.availability, Offer.last_seen]
    column_searchable_list = [Offer.external_id, Offer.url, Offer.barcode]
    column_sortable_list = [Offer.id, Offer.external_id, Offer.price, Offer.last_seen]
    column_default_sort = [(Offer.id, False)]
    column_details_list = [Offer.id, Offer.external_id, Offer.url, Offer.release, Offer.source, Offer.format,
                           Offer.condition, Offer.media_grade, Offer.sleeve_grade, Offer.barcode, Offer.price,
                           Offer.currency, Offer.availability, Offer.in_stock, Offer.first_seen, Offer.last_seen,
                           Offer.history]
    chart_id, chart_title = "price-chart", "Price history"

    def chart_src(self, request: Request, model: Any) -> str:
        return str(request.url_for("admin:view-chart-offer", offer_id=model.id))


class OfferHistoryAdmin(ReadOnly, model=OfferHistory):
    name, name_plural, icon = "Price change", "Price history", "fa-solid fa-clock-rotate-left"
    column_list = [OfferHistory.id, OfferHistory.offer_id, OfferHistory.old_price, OfferHistory.new_price,
                   OfferHistory.new_currency, OfferHistory.changed_at]
    column_sortable_list = [OfferHistory.id, OfferHistory.changed_at]
    column_default_sort = [(OfferHistory.id, True)]


def _meta_summary(source: Source, _attr: Any) -> str:
    meta = source.meta or {}
    progress = meta.get("progress") or {}
    line = f" line {meta['last_parsed_line']}/{meta.get('total_lines')}" if meta.get("last_parsed_line") else ""
    rate = f", {progress['items_per_minute']} items/min" if progress.get("items_per_minute") else ""
    return f"{meta.get('status', '-')}{line}{rate}"


def _meta_detail(source: Source, _attr: Any) -> str:
    """The metadata as JSON, without the ids of the crawl calls recorded (bookkeeping: ``update_source_meta``)."""
    shown = {key: value for key, value in (source.meta or {}).items() if key != CALLS_KEY}
    return json.dumps(shown, indent=1, ensure_ascii=False, default=str)


class SourceAdmin(WithChart, model=Source):
    name, name_plural, icon = "Source", "Sources", "fa-solid fa-store"
    column_list = [Source.id, Source.name, Source.kind, Source.location, Source.meta]
    column_labels = {Source.meta: "status / progress"}
    column_searchable_list = [Source.name, Source.location]
    column_sortable_list = [Source.id, Source.name, Source.kind]
    column_formatters = {Source.meta: _meta_summary}
    column_details_list = [Source.id, Source.name, Source.kind, Source.location, Source.meta]
    column_formatters_detail = {Source.meta: _meta_detail}
    chart_id, chart_title = "crawl-rate-chart", "Crawl rate"
    chart_empty = "No crawl of this source has stored anything yet."

    def chart_src(self, request: Request, model: Any) -> str:
        return f"{request.url_for('admin:view-chart-crawl-rate')}?source={int(model.id)}"


class SpellingAdmin(ReadOnly, model=SourceSpelling):
    """Which artist, label or style each spelling a source used was matched with."""

    name, name_plural, icon = "Spelling", "Spellings", "fa-solid fa-spell-check"
    can_view_details = False  # the list shows every column; a details URL would carry the spelling unquoted
    column_list = [SourceSpelling.source_id, SourceSpelling.kind, SourceSpelling.spelling, SourceSpelling.entity_id]
    column_labels = {SourceSpelling.source_id: "source id", SourceSpelling.entity_id: "entity id"}
    column_searchable_list = [SourceSpelling.spelling]
    column_sortable_list = [SourceSpelling.source_id, SourceSpelling.kind, SourceSpelling.spelling]
    column_default_sort = [(SourceSpelling.source_id, False), (SourceSpelling.kind, False),
                           (SourceSpelling.spelling, False)]


CATALOG_VIEWS = (ReleaseAdmin, ArtistAdmin, LabelAdmin, StyleAdmin, OfferAdmin, OfferHistoryAdmin, SourceAdmin,
                 SpellingAdmin)
