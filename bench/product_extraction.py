"""The zero-selector path (``structured: schema.org``, no field named) on a public product-extraction
dataset with ground truth: precision, recall and F1 for price, SKU and availability, beside the
figures the dataset publishes for other extractors.

    python bench/product_extraction.py PATH/TO/product-extraction-benchmark/dataset

The dataset (MIT) is Zyte's product extraction benchmark (github.com/scrapinghub/product-extraction-
benchmark): ``ground-truth.json`` and ``html/<id>.html.gz``. It is not ours, so it is not stored in
this repository: give the folder that holds it. Scoring follows its ``evaluate.py``: at most one
predicted value per attribute, correct when it is one of the ground truth's values (prices as
decimals); availability is InStock unless the page says it is out of stock, as the dataset scores
the other systems. Its published table has the ± of 1,000 bootstrap samples; here only the point values.

``--split even`` / ``--split odd`` scores half of the pages: the 2nd, 4th, 6th… (even) or the 1st,
3rd, 5th… (odd) page in the order of ``ground-truth.json``. Rules were developed looking at the
even half only; the odd half is held out, so its figures say how well they carry to unseen shops.
``--no-visible-text`` reads the markup only (the figures before the visible-text rules).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from scrapy.http import HtmlResponse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.exceptions import RecordhoundError  # noqa: E402
from recordhound.music import availability  # noqa: E402
from recordhound.prices import parse_price  # noqa: E402
from recordhound.sources import schema_org  # noqa: E402
from recordhound.sources.extract import extract_release  # noqa: E402
from recordhound.sources.schema import build_profile  # noqa: E402

PUBLISHED = {  # attribute → system → (F1, precision, recall), from the dataset's README (support 134/135/140)
    "price": {"Zyte": (0.918, 0.918, 0.918), "Diffbot": (0.824, 0.844, 0.806), "extruct": (0.685, 0.864, 0.567)},
    "sku": {"Zyte": (0.841, 0.860, 0.822), "Diffbot": (0.765, 0.828, 0.711), "extruct": (0.537, 0.786, 0.407)},
    "availability": {"Zyte": (0.957, 0.957, 0.957), "Diffbot": (0.943, 0.943, 0.943),
                     "extruct": (0.626, 0.905, 0.479)},
}
ATTRIBUTES = ("price", "sku", "availability")


def predict(url: str, html: bytes, visible_text: bool = True) -> dict[str, str | None]:
    """What the zero-selector path reads from one page: the price, the shop's id, the stock.

    The fields are read as a crawl reads them, each normalised on its own (a general product page
    has no artists, so the release as a whole would not be stored: that is not what is measured)."""
    profile = build_profile("(bench)", {"name": "bench", "base_url": url, "start_urls": ["/"],
                                        "links": {"product": "a::attr(href)"}, "structured": "schema.org"})
    profile = replace(profile, visible_text=visible_text)
    raw = extract_release(HtmlResponse(url, body=html), profile)
    first = raw.offers[0] if raw.offers else None
    text, machine = (first.price, first.machine_price) if first and first.price else (raw.price, "price" in raw.structured)
    try:
        price = parse_price(text, default_currency="XXX", schema_number=machine).amount if text else None
    except RecordhoundError:
        price = None
    state = availability(first.availability if first and first.availability else raw.in_stock)
    sku = raw.external_id or (first.external_id if first else None) or raw.text_id
    return {"price": None if price is None else str(price), "sku": sku,
            "availability": "OutOfStock" if state == "sold_out" else "InStock"}


def matching(attribute: str, truth: set[str], predicted: str | None) -> tuple[int, int, int]:
    """(tp, fp, fn) as the dataset's evaluate.py counts them."""
    if attribute == "price":
        truth = {_decimal(t) for t in truth} - {None}  # type: ignore[misc]
        predicted = _decimal(predicted) if predicted is not None else None  # type: ignore[assignment]
    if predicted is None:
        return 0, 0, int(bool(truth))
    if predicted in truth:
        return 1, 0, 0
    return 0, 1, int(bool(truth))


def _decimal(text: str | None) -> Any:
    try:
        return Decimal(str(text).strip()) if text is not None else None
    except InvalidOperation:
        return None


def scores(counts: tuple[int, int, int]) -> tuple[float, float, float]:
    tp, fp, fn = counts
    precision = 1.0 if fp == fn == 0 else (0.0 if tp == fp == 0 else tp / (tp + fp))
    recall = 1.0 if fp == fn == 0 else (0.0 if tp == fn == 0 else tp / (tp + fn))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return f1, precision, recall


def half(truth: dict[str, dict[str, Any]], split: str | None) -> dict[str, dict[str, Any]]:
    """The pages at even or odd 1-based positions in the ground truth's own order (all of them: None)."""
    if split is None:
        return truth
    start = 1 if split == "even" else 0
    return dict(list(truth.items())[start::2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path, help="the dataset folder (ground-truth.json, html/)")
    parser.add_argument("--json-ld-and-microdata-only", action="store_true",
                        help="without the Open Graph / meta tag / loose itemprop / visible-text fallbacks (the baseline)")
    parser.add_argument("--no-visible-text", action="store_true",
                        help="markup only: without the visible-text rules (the figures before them)")
    parser.add_argument("--split", choices=("even", "odd"),
                        help="score only the pages at even (2nd, 4th, …) or odd (1st, 3rd, …) positions")
    args = parser.parse_args()
    if args.json_ld_and_microdata_only:
        schema_org.FALLBACKS.clear()
    truth = half(json.loads((args.dataset / "ground-truth.json").read_text()), args.split)
    totals = {a: [0, 0, 0] for a in ATTRIBUTES}
    support = dict.fromkeys(ATTRIBUTES, 0)
    started = time.monotonic()
    for page_id, expected in sorted(truth.items()):
        html = gzip.decompress((args.dataset / "html" / f"{page_id}.html.gz").read_bytes())
        predicted = predict(expected["url"], html, not (args.no_visible_text or args.json_ld_and_microdata_only))
        for attribute in ATTRIBUTES:
            values = set(expected.get(attribute, []))
            support[attribute] += bool(values)
            for i, n in enumerate(matching(attribute, values, predicted[attribute])):
                totals[attribute][i] += n
    seconds = time.monotonic() - started
    rows = [("attribute", "system", "F1", "precision", "recall", "support")]
    for attribute in ATTRIBUTES:
        f1, p, r = scores((totals[attribute][0], totals[attribute][1], totals[attribute][2]))
        name = ("recordhound, JSON-LD + microdata only" if args.json_ld_and_microdata_only else
                "recordhound, markup only" if args.no_visible_text else "recordhound (zero selectors)")
        rows.append((attribute, name, f"{f1:.3f}", f"{p:.3f}", f"{r:.3f}",
                     str(support[attribute])))
        for system, (pf1, pp, pr) in PUBLISHED[attribute].items():
            rows.append(("", f"{system} (published)", f"{pf1:.3f}", f"{pp:.3f}", f"{pr:.3f}", ""))
    print(table(rows))
    print(f"{len(truth)} pages in {seconds:.1f} s ({len(truth) / seconds:.1f} pages/s)")


if __name__ == "__main__":
    main()
