"""recordhound imported from a zip (as scrapyd runs eggs): bundled profiles and migrations still load."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import recordhound
from recordhound.demo.process import ShopProcess
from tests.integration.dbcheck import ProductDb
from tests.services import TRUSTED


def _zip_package(target: Path) -> Path:
    package = Path(recordhound.__file__).parent
    egg = target / "recordhound-test.egg"
    with zipfile.ZipFile(egg, "w") as archive:
        for path in package.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, Path("recordhound") / path.relative_to(package))
    return egg


def test_crawl_runs_from_a_zipped_package(tmp_path: Path) -> None:
    egg = _zip_package(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(egg), "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'p.sqlite3'}", "REDIS_URL": ""}
    where = subprocess.run([sys.executable, "-c", "import recordhound; print(recordhound.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(egg))
    with ShopProcess(40, seed=2) as shop:
        expected = shop.truth()["counts"]
        done = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", "source=demo",
                               "-a", f"base_url={shop.url}", *TRUSTED], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    db = ProductDb(f"sqlite:///{tmp_path / 'p.sqlite3'}")
    assert db.counts()["offers"] == expected["offers"]
    db.close()
