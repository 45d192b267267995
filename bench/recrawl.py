"""Bench: price tracking over one (scaled) day: full recrawls vs a fixed recrawl schedule vs an
adaptive one, against a demo shop whose prices change every 6 hours.

    python bench/recrawl.py [--releases 5000] [--hour 4]

One simulated hour lasts ``--hour`` real seconds. The shop starts at epoch 0 and moves to the
next price epoch at 6, 12 and 18 hours; about one offer in ten is "hot" and changes in most
epochs, the rest rarely. Each strategy gets a fresh shop and database, and the day ends at 24 h
(6 hours after the last change). Each strategy:

- full recrawls (the baseline): `scrapy crawl` from scratch at 0 h and an hour after each epoch
  change (it knows when prices change, which a real shop does not tell);
- fixed schedule: one following node, `recrawl: {product: 3h, listing: 3h, pagination: 3h}`;
- adaptive: one following node, `recrawl: {product: 3h, listing: 3h, pagination: 3h, min: 1h, max: 6h}`.

Prints pages fetched per day (and how many were 304s), the price changes caught (of every
(offer, epoch) price change, how many reached ``offer_history``), and how long after the change
they were caught on average (simulated hours), for the hot offers and the others.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.demo.catalog import Catalog, is_hot  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402
from recordhound.demo.truth import build_truth  # noqa: E402
from tests.integration.crawlers import CrawlSetup  # noqa: E402
from tests.integration.dbcheck import ProductDb  # noqa: E402

SEED, EPOCHS = 91, 3
BUNDLED = Path(__file__).resolve().parents[1] / "recordhound/sources/profiles/demo.yaml"
SETTINGS = ("RECORDHOUND_PRICE_REVIEW_THRESHOLD=1000", "LOG_LEVEL=WARNING")
SCHEDULES = {
    "fixed schedule (3 h)": "{product: 3h, listing: 3h, pagination: 3h}",
    "adaptive (3 h, 1 h - 6 h)": "{product: 3h, listing: 3h, pagination: 3h, min: 1h, max: 6h}",
}


def seconds(text: str, hour: float) -> str:
    """A recrawl spec in simulated hours, in real seconds."""
    for unit, factor in (("6h", 6), ("3h", 3), ("1h", 1)):
        text = text.replace(unit, f"{factor * hour:g}s")
    return text


def caught(database_url: str, releases: int, started: float, hour: float) -> tuple[int, int, str, str]:
    """(caught, changes, mean delay of the hot offers' changes, of the others'), delays in simulated hours."""
    expected = {(c["external_id"], Decimal(c["old_price"]), Decimal(c["new_price"])): epoch
                for epoch in range(1, EPOCHS + 1)
                for c in build_truth(Catalog(releases, seed=SEED, epoch=epoch))["changed_offers"]}
    db = ProductDb(database_url)
    try:
        stored = {(sku, Decimal(str(old)).quantize(Decimal("0.01")), Decimal(str(new)).quantize(Decimal("0.01"))): at
                  for sku, old, new, at in db.rows("SELECT o.external_id, h.old_price, h.new_price, h.changed_at "
                                                   "FROM offer_history h JOIN offers o ON o.id = h.offer_id")}
    finally:
        db.close()
    delays: dict[bool, list[float]] = {True: [], False: []}
    for key, epoch in expected.items():
        if key in stored:
            when = stored[key]
            at = datetime.fromisoformat(when) if isinstance(when, str) else when  # SQLite gives text
            at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
            delays[is_hot(SEED, key[0])].append((at.timestamp() - started) / hour - epoch * 6)
    mean = {hot: f"{sum(d) / len(d):.1f} h" if d else "-" for hot, d in delays.items()}
    return len(delays[True]) + len(delays[False]), len(expected), mean[True], mean[False]


def run(name: str, releases: int, hour: float, work: Path) -> tuple[str, ...]:
    work.mkdir()
    epochs = ("--epoch-seconds", f"{6 * hour:g}", "--last-epoch", str(EPOCHS))
    with ShopProcess(releases, seed=SEED, throttle=epochs) as shop:
        shop_started = time.time()  # the shop's clock of epochs starts about now
        setup = CrawlSetup(work, shop.url, f"sqlite:///{work / 'product.sqlite3'}")
        day_ends = time.monotonic() + 24 * hour
        if name in SCHEDULES:
            (work / "profiles").mkdir()
            (work / "profiles/demo.yaml").write_text(BUNDLED.read_text() + f"recrawl: {seconds(SCHEDULES[name], hour)}\n")
            node = setup.start(*SETTINGS, "RECORDHOUND_FOLLOW=true", name="follow")
            time.sleep(max(0.0, day_ends - time.monotonic()))
            node.signal(signal.SIGTERM)
            node.wait(300)
        else:
            started = time.monotonic()
            for run_index in range(EPOCHS + 1):  # at 0 h, then an hour after each epoch change
                time.sleep(max(0.0, started + (run_index * 6 + (1 if run_index else 0)) * hour - time.monotonic()))
                setup.start(*SETTINGS, name=f"full{run_index}").wait(3600)
        stats = shop.stats()
        pages = sum(n for path, n in stats["requests"].items() if not path.startswith("/_"))
        not_modified = sum(stats["not_modified"].values())
        got, of, hot_delay, other_delay = caught(setup.database_url, releases, shop_started, hour)
    return (name, str(pages), str(not_modified), f"{got} of {of}", f"{got / max(1, of):.0%}", hot_delay, other_delay)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=5000)
    parser.add_argument("--hour", type=float, default=4.0, help="real seconds per simulated hour")
    args = parser.parse_args()
    rows = [("strategy", "pages fetched / day", "of them 304", "price changes caught", "share",
             "caught after: hot offers", "others")]
    with tempfile.TemporaryDirectory() as tmp:
        for index, name in enumerate(("full recrawls every 6 h (baseline)", *SCHEDULES)):
            rows.append(run(name, args.releases, args.hour, Path(tmp) / f"run{index}"))
            print(f"done: {name}", file=sys.stderr)
    print(f"demo shop: {args.releases} releases, prices change at 6, 12 and 18 h; "
          f"1 simulated hour = {args.hour:g} s")
    print(table(rows))


if __name__ == "__main__":
    main()
