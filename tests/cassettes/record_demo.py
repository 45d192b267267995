"""Record tests/cassettes/demo_20.json: a crawl of a 20-release demo shop (seed 1), its base URL
replaced by http://demo.test/ so that the replay is plainly offline.

    .venv/bin/python tests/cassettes/record_demo.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recordhound.demo.process import ShopProcess  # noqa: E402
from tests.services import run_crawl  # noqa: E402

OFFLINE_BASE = "http://demo.test/"
TARGET = Path(__file__).parent / "demo_20.json"


def main() -> None:
    with ShopProcess(20, seed=1) as shop, tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.json"
        done = run_crawl(Path(tmp), f"sqlite:///{tmp}/x.sqlite3", "-a", "source=demo", "-a", f"base_url={shop.url}",
                         "-s", f"RECORDHOUND_CASSETTE={raw}", "-s", "RECORDHOUND_CASSETTE_MODE=record")
        assert done.returncode == 0, done.stderr[-2000:]
        TARGET.write_text(raw.read_text().replace(shop.url, OFFLINE_BASE).replace(
            shop.url.rstrip("/").split("//")[1], "demo.test"))
    print(f"recorded {TARGET}")


if __name__ == "__main__":
    main()
