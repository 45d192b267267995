"""The demo catalog as CSV, XLSX and JSON feeds (file sources read these)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from recordhound.demo.catalog import Catalog
from recordhound.demo.pages import price_text

COLUMNS = ("sku", "title", "artists", "label", "catalog_number", "year", "styles", "price", "in_stock")


def rows(catalog: Catalog) -> Iterator[tuple[str, ...]]:
    for p in catalog.products:
        yield (
            p.sku, p.title, " / ".join(p.artists), p.label, p.catno, str(p.year),
            "; ".join(p.styles), price_text(catalog.price(p), p.currency, p.price_format),
            "yes" if p.in_stock else "no",
        )


def to_csv(catalog: Catalog) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows(catalog))
    return out.getvalue().encode("utf-8")


def to_json(catalog: Catalog) -> bytes:
    """JSON Lines: one object per line, so a reader can resume at a line number."""
    lines = (json.dumps(dict(zip(COLUMNS, row)), ensure_ascii=False) for row in rows(catalog))
    return ("\n".join(lines) + "\n").encode("utf-8")


def to_json_array(catalog: Catalog) -> bytes:
    return json.dumps([dict(zip(COLUMNS, row)) for row in rows(catalog)], ensure_ascii=False).encode()


def to_xlsx(catalog: Catalog) -> bytes:
    from openpyxl import Workbook  # imported here: only feeds need it

    book = Workbook(write_only=True)
    sheet = book.create_sheet("catalog")
    sheet.append(COLUMNS)
    for row in rows(catalog):
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


FEEDS = {
    "/feeds/catalog.csv": ("text/csv; charset=utf-8", to_csv),
    "/feeds/catalog.json": ("application/json", to_json_array),
    "/feeds/catalog.jsonl": ("application/x-ndjson; charset=utf-8", to_json),
    "/feeds/catalog.xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", to_xlsx),
    "/feeds/second.csv": ("text/csv; charset=utf-8", lambda catalog: _second_csv(catalog)),
}


def _second_csv(catalog: Catalog) -> bytes:
    from recordhound.demo.second import second_csv  # imports this module's COLUMNS

    return second_csv(catalog)
