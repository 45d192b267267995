"""Fields a profile gets right, per section of the demo shop, with the bundled and the drafted profiles.

    python bench/profiles.py [--releases 500]

For each section it crawls the demo shop with the bundled profile and with one drafted by
`recordhound profile draft` from the section's first listing page, then compares every stored
offer field by field with the shop's own truth (``/_truth.json``; ``sections.ld`` for /ld/). The
platform-like sections (Shopify-, WooCommerce-, Bandcamp-like, marketplace) have no bundled
profile: only the drafted one, compared offer by offer with format, condition, grades,
availability and barcode.
"Hand edits" is the number of profile fields that got at least one offer wrong: each would need
an edit before the drafted profile is right.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import table  # noqa: E402
from recordhound.demo.shops import SECTIONS  # noqa: E402
from recordhound.demo.process import ShopProcess  # noqa: E402
from tests.integration.dbcheck import ProductDb  # noqa: E402
from tests.integration.truthcheck import expected_offer, stored_offers  # noqa: E402
from tests.services import run_crawl  # noqa: E402


def _compare(database: str, truth: dict[str, Any]) -> tuple[int, int, set[str], int]:
    db = ProductDb(database)
    try:
        stored = stored_offers(db)
    finally:
        db.close()
    matched = total = 0
    wrong: set[str] = set()
    for offer in truth["offers"]:
        want = expected_offer(offer)
        got = stored.get(offer["external_id"], {})
        for name, value in want.items():
            total += 1
            if got.get(name) == value:
                matched += 1
            else:
                wrong.add(name)
    return matched, total, wrong, len(set(stored) - {o["external_id"] for o in truth["offers"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--releases", type=int, default=500)
    args = parser.parse_args()
    rows = [("section", "profile", "fields matched", "hand edits", "extra offers")]
    with ShopProcess(args.releases, seed=7) as shop, tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        truth = shop.truth()
        for section, listing, bundled, expected in (
                ("classic HTML", "catalog?page=1", "demo", truth),
                ("JSON-LD / microdata", "ld/catalog?page=1", "demo_ld", truth["sections"]["ld"])):
            drafted = work / f"drafted-{bundled}.yaml"
            done = subprocess.run([sys.executable, "-m", "recordhound", "profile", "draft", shop.url + listing,
                                   "--name", f"drafted_{bundled}", "-o", str(drafted)],
                                  cwd=work, capture_output=True, text=True, timeout=300)
            if done.returncode:
                raise SystemExit(f"profile draft failed: {done.stderr.strip()}")
            for label, source in (("bundled", bundled), ("drafted", str(drafted))):
                database = f"sqlite:///{work / f'{label}-{bundled}.sqlite3'}"
                result = run_crawl(work, database, "-a", f"source={source}", "-a", f"base_url={shop.url}")
                if result.returncode:
                    raise SystemExit(f"crawl with {source} failed: {result.stderr[-500:]}")
                matched, total, wrong, extra = _compare(database, expected)
                edits = f"{len(wrong)}" + (f" ({', '.join(sorted(wrong))})" if wrong else "")
                rows.append((section, label, f"{matched}/{total}", edits if label == "drafted" else "-", str(extra)))
                print(f"{section}, {label}: {matched}/{total} fields", flush=True)
        for section in SECTIONS:  # platform-like sections: drafted profiles only (nobody wrote one)
            rows.append(_platform_section(shop, work, section, truth["sections"][section]))
            print(f"{section}: {rows[-1][2]} fields", flush=True)
    print(table(rows))


def _platform_section(shop: ShopProcess, work: Path, section: str, expected: dict[str, Any]) -> tuple[str, ...]:
    """Draft from the section's first listing, crawl, compare offer by offer (formats, grades, barcodes)."""
    drafted = work / f"drafted-{section}.yaml"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "recordhound", "profile", "draft",
                           shop.url.rstrip("/") + expected["first_listing"], "--name", f"drafted_{section}",
                           "-o", str(drafted)], cwd=work, capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise SystemExit(f"profile draft failed: {done.stderr.strip()}")
    database = f"sqlite:///{work / f'drafted-{section}.sqlite3'}"
    result = run_crawl(work, database, "-a", f"source={drafted}")
    if result.returncode:
        raise SystemExit(f"crawl of {section} failed: {result.stderr[-500:]}")
    matched, total, wrong, extra = _compare(database, expected)
    edits = f"{len(wrong)}" + (f" ({', '.join(sorted(wrong))})" if wrong else "")
    offers = len(expected["offers"])
    return (f"{section} ({offers} offers, {time.monotonic() - started:.1f} s)", "drafted", f"{matched}/{total}",
            edits, str(extra))


if __name__ == "__main__":
    main()
