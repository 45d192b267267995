"""Compare a crawl's product DB and frontier with the demo shop's own truth (``/_truth.json``).

Used by every crash and outage test: field by field for each offer and its release, no
duplicates, IDs 1..count in every table, PostgreSQL sequences at max(id), ``failed`` holding
exactly the shop's known fault pages, and ``recordhound frontier verify`` clean.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recordhound.config import FrontierConfig
from recordhound.text import catalog_number_key, name_key
from tests.integration.crawlers import CrawlSetup
from tests.integration.dbcheck import ProductDb

FAILED_FAULTS = ("not_found", "redirect_loop")  # the only fault pages a correct crawl records as failed


def stored_offers(db: ProductDb) -> dict[str, dict[str, Any]]:
    """external_id → the offer with its release's fields, as names (not ids)."""
    rows = db.rows(
        "SELECT o.external_id, o.price, o.currency, o.in_stock, r.id AS rid, r.title, r.year, "
        "r.catalog_number, l.name AS label, o.format, o.condition, o.media_grade, o.sleeve_grade, "
        "o.availability, o.barcode FROM offers o JOIN releases r ON r.id = o.release_id "
        "LEFT JOIN labels l ON l.id = r.label_id")
    artists: dict[int, list[str]] = defaultdict(list)
    for rid, name in db.rows("SELECT ra.release_id, a.name FROM release_artists ra "
                             "JOIN artists a ON a.id = ra.artist_id ORDER BY ra.release_id, ra.position"):
        artists[rid].append(name)
    numbers: dict[int, list[str]] = defaultdict(list)
    for rid, key in db.rows("SELECT release_id, catno_key FROM release_catnos ORDER BY release_id, position"):
        numbers[rid].append(key)
    styles: dict[int, set[str]] = defaultdict(set)
    for rid, name in db.rows("SELECT rs.release_id, s.name FROM release_styles rs JOIN styles s ON s.id = rs.style_id"):
        styles[rid].add(name_key(name))
    return {r.external_id: {
        "price": None if r.price is None else f"{r.price:.2f}", "currency": r.currency,
        "in_stock": bool(r.in_stock), "title": r.title, "year": r.year,
        "catalog_number": catalog_number_key(r.catalog_number or ""),
        "label": name_key(r.label or ""), "artists": [name_key(a) for a in artists[r.rid]],
        "styles": styles[r.rid], "catalog_numbers": numbers[r.rid],
        **{name: getattr(r, name) for name in OFFER_FIELDS}} for r in rows}


OFFER_FIELDS = ("format", "condition", "media_grade", "sleeve_grade", "availability", "barcode")  # sections that sell formats


def expected_offer(offer: dict[str, Any]) -> dict[str, Any]:
    return {
        "price": offer["price"], "currency": offer["currency"], "in_stock": offer["in_stock"],
        "title": offer["title"], "year": offer["year"], "catalog_number": catalog_number_key(offer["catalog_number"]),
        "label": name_key(offer["label"]), "artists": [name_key(a) for a in offer["artists"]],
        "styles": {name_key(s) for s in offer["styles"]}, **{name: offer[name] for name in OFFER_FIELDS if name in offer},
        **({"catalog_numbers": [catalog_number_key(n) for n in offer["catalog_numbers"]]}
           if "catalog_numbers" in offer else {})}


def _compared(stored: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    """The stored offer's fields the truth names (the classic shop's truth has no formats)."""
    return {name: stored[name] for name in want}


def assert_product_db_matches(database_url: str, truth: dict[str, Any]) -> None:
    db = ProductDb(database_url)
    try:
        stored = stored_offers(db)
        expected = {o["external_id"]: expected_offer(o) for o in truth["offers"]}
        assert sorted(stored) == sorted(expected), (
            f"missing {sorted(set(expected) - set(stored))[:5]}, extra {sorted(set(stored) - set(expected))[:5]}")
        wrong = {sku: (_compared(stored[sku], want), want) for sku, want in expected.items()
                 if _compared(stored[sku], want) != want}
        assert not wrong, f"{len(wrong)} offers differ from the truth, e.g. {next(iter(wrong.items()))}"
        counts = db.counts()
        for table in ("releases", "offers", "artists", "labels", "styles"):
            assert counts[table] == truth["counts"][table], f"{table}: {counts[table]} rows, truth {truth['counts'][table]}"
        assert_ids_consecutive(db)
    finally:
        db.close()


def assert_ids_consecutive(db: ProductDb | str) -> None:
    """``db``: an open ProductDb, or a database URL (opened and closed here)."""
    if isinstance(db, str):
        opened = ProductDb(db)
        try:
            return assert_ids_consecutive(opened)
        finally:
            opened.close()
    counts, max_ids, sequences = db.counts(), db.max_ids(), db.sequences()
    for table, top in max_ids.items():
        assert (top or 0) == counts[table], f"{table}: max(id) {top} for {counts[table]} rows"
        if sequences:  # an empty table's is unused (``last_value`` NULL): a rollback left none ahead
            assert sequences[f"{table}_id_seq"] == top, (
                f"{table}: sequence at {sequences[f'{table}_id_seq']}, max(id) {top}")


def failed_paths(setup: CrawlSetup) -> list[str]:
    """The pages the crawl recorded as failed, each by the URL the crawl was sent to (the first
    of its redirect chain)."""
    backend = setup.backend()
    try:
        requests = [json.loads(payload) for payload, _ in backend.failures(10_000)]
    finally:
        backend.close()
    return sorted(first_url(r).split("/", 3)[-1] for r in requests)


def first_url(request: dict[str, Any]) -> str:
    """The URL a stored request was sent to: the first of its redirect chain."""
    return str([*request["meta"].get("redirect_urls", ()), request["url"]][0])


def assert_frontier_clean(setup: CrawlSetup, truth: dict[str, Any]) -> None:
    from recordhound.frontier.status import verify

    failed, known = failed_paths(setup), sorted(truth["faults"][f].lstrip("/") for f in FAILED_FAULTS)
    assert failed == known, f"failed pages {failed}, the shop's known fault pages {known}"
    counts = setup.counts()
    # nothing queued or leased; rechecks that came due since the crawl ended are the next run's work
    assert counts.seeded and counts.queued == 0 and counts.leased_total == 0, counts
    assert counts.status == "completed", counts
    assert verify(setup.frontier_config(), "demo") == []


def assert_crawl_matches_truth(setup: CrawlSetup, truth: dict[str, Any]) -> None:
    assert_product_db_matches(setup.database_url, truth)
    assert_frontier_clean(setup, truth)


def tally(setup: CrawlSetup, truth: dict[str, Any]) -> dict[str, int]:
    """The same comparison as counts, for ``bench/torture.py`` (which reports, not asserts)."""
    from recordhound.frontier.status import verify

    db = ProductDb(setup.database_url)
    try:
        stored = stored_offers(db)
        expected = {o["external_id"]: expected_offer(o) for o in truth["offers"]}
        counts, max_ids = db.counts(), db.max_ids()
        extra_rows = sum(max(0, counts[t] - truth["counts"][t]) for t in ("releases", "artists", "labels", "styles"))
        result = {
            "lost": sum(1 for sku, want in expected.items() if sku not in stored or _compared(stored[sku], want) != want),
            "duplicated": extra_rows + len(set(stored) - set(expected)),
            "id_gaps": sum((top or 0) - counts[t] for t, top in max_ids.items()),
        }
    finally:
        db.close()
    allowed = {truth["faults"][f].lstrip("/") for f in FAILED_FAULTS}
    failed = failed_paths(setup)
    result["wrongly_failed"] = sum(1 for path in failed if path not in allowed)
    result["verify_problems"] = len(verify(setup.frontier_config(), "demo"))
    return result


def frontier_at(workdir: Path | str, redis_url: str = "", prefix: str = "") -> FrontierConfig:
    """The frontier of crawls run in ``workdir``: its embedded file there, or Redis under ``prefix``."""
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("recordhound.settings")
    settings.setdict({"RECORDHOUND_FRONTIER_DIR": str(Path(workdir) / ".recordhound" / "frontier"),
                      "RECORDHOUND_REDIS_URL": redis_url, "RECORDHOUND_REDIS_PREFIX": prefix})
    return FrontierConfig.from_settings(settings)


def assert_failed_only_faults(config: FrontierConfig, crawl: str, truth: dict[str, Any]) -> None:
    """``failed`` holds exactly the shop's known fault pages (of the truth given: a section may have
    none), each by the URL it was sent to, and ``recordhound frontier verify`` finds nothing."""
    from recordhound.frontier.status import opened, verify

    with opened(config, crawl) as backend:
        failed = sorted(urlsplit(first_url(json.loads(payload))).path for payload, _ in backend.failures(10_000))
    faults = truth.get("faults", {})
    known = sorted(faults[fault] for fault in FAILED_FAULTS if fault in faults)
    assert failed == known, f"failed pages {failed}, the shop's known fault pages {known}"
    assert verify(config, crawl) == []
