"""Shops added from their structured data: the demo's JSON-LD / microdata section crawled with the
bundled profile and with drafted ones, prices in mixed currencies, and profile errors.

Expected values come from the demo shop's own ``/_truth.json`` (``sections.ld`` for the section)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from recordhound.demo.process import ShopProcess
from recordhound.sources import find_profile
from tests.integration.truthcheck import assert_product_db_matches
from tests.services import PostgresDatabase, run_crawl


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopProcess]:
    with ShopProcess(120, seed=5) as running:
        yield running


def _recordhound(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "recordhound.settings"}
    return subprocess.run([sys.executable, "-m", "recordhound", *args], cwd=workdir, capture_output=True,
                          text=True, timeout=300, env=env)


def _section(shop: ShopProcess) -> dict[str, Any]:
    section: dict[str, Any] = shop.truth()["sections"]["ld"]
    return section


def _ld_profile(tmp_path: Path, price: dict[str, Any] | None, name: str) -> Path:
    """The bundled demo_ld profile, with its price read from the visible text by a selector."""
    document = yaml.safe_load(find_profile("demo_ld").read_text())
    document.update(name=name, fields={"price": ".price::text"})
    if price is not None:
        document["price"] = price
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return path


def test_json_ld_section_with_the_bundled_profile_equals_its_truth(
        shop: ShopProcess, database_url: str, tmp_path: Path) -> None:
    section = _section(shop)
    formats = {o["currency"] for o in section["offers"]}
    assert formats == {"EUR", "GBP"} and any(float(o["price"]) > 1000 for o in section["offers"])
    result = run_crawl(tmp_path, database_url, "-a", "source=demo_ld", "-a", f"base_url={shop.url}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_product_db_matches(database_url, section)
    assert result.stats.get("recordhound/errors", 0) == 0, result.stats


@pytest.mark.parametrize("section", ["ld", "classic"])
def test_drafted_profile_crawls_to_the_truth_without_edits(shop: ShopProcess, tmp_path: Path, section: str) -> None:
    listing = f"{shop.url}ld/catalog?page=1" if section == "ld" else f"{shop.url}catalog?page=1"
    drafted = tmp_path / "drafted.yaml"
    done = _recordhound(tmp_path, "profile", "draft", listing, "--name", "drafted", "-o", str(drafted))
    assert done.returncode == 0, done.stderr[-3000:]
    document = yaml.safe_load(drafted.read_text())
    if section == "ld":
        assert document["structured"] == "schema.org" and "fields" not in document
    checked = _recordhound(tmp_path, "profile", "test", str(drafted), "--pages", "10")
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "10 product pages checked" in checked.stdout and "never found" not in checked.stdout
    database = f"sqlite:///{tmp_path / 'drafted.sqlite3'}"
    result = run_crawl(tmp_path, database, "-a", f"source={drafted}")
    assert result.returncode == 0, result.stderr[-3000:]
    truth = shop.truth()
    assert_product_db_matches(database, truth["sections"]["ld"] if section == "ld" else truth)


def test_a_wrong_decimal_separator_is_caught_and_per_currency_rules_are_exact(
        shop: ShopProcess, database_url: str, tmp_path: Path) -> None:
    section = _section(shop)
    pounds = {o["path"] for o in section["offers"] if o["currency"] == "GBP"}
    assert pounds and len(pounds) < len(section["offers"])
    wrong = _ld_profile(tmp_path, {"decimal_separator": ","}, "wrong_separator")
    result = run_crawl(tmp_path, database_url, "-a", f"source={wrong}", "-a", f"base_url={shop.url}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stats.get("recordhound/errors/rejected") == len(pounds), result.stats
    assert "does not fit the decimal separator ','" in result.stderr

    report = _recordhound(tmp_path, "profile", "test", str(wrong), "--pages", "100", "--base-url", shop.url)
    assert report.returncode == 0, report.stderr[-3000:]
    named = {line.split(" at ", 1)[1].split(" ", 1)[0] for line in report.stdout.splitlines()
             if line.strip().startswith("outlier GBP")}
    assert {shop.url.rstrip("/") + path for path in pounds} == named, report.stdout[-3000:]

    rules = {"currencies": {"EUR": {"decimal_separator": ",", "thousands_separator": "."},
                            "GBP": {"decimal_separator": ".", "thousands_separator": ","}}}
    right = _ld_profile(tmp_path, rules, "per_currency")
    with _fresh_database(database_url, tmp_path) as fresh:
        result = run_crawl(tmp_path, fresh, "-a", f"source={right}", "-a", f"base_url={shop.url}")
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stats.get("recordhound/errors", 0) == 0, result.stats
        assert_product_db_matches(fresh, section)


@contextmanager
def _fresh_database(like: str, tmp_path: Path) -> Iterator[str]:
    """Another empty database of the same kind as ``like``."""
    if like.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
        return
    with PostgresDatabase() as database:
        yield database.url


def test_an_invalid_profile_is_one_message_and_exit_1(tmp_path: Path) -> None:
    document = yaml.safe_load(find_profile("demo_ld").read_text())
    document["fields"] = {"price": {"jsonld": "offers[0.price"}}
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(document))
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "recordhound.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'p.sqlite3'}"}
    crawl = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "catalog", "-a", f"source={broken}"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    tested = _recordhound(tmp_path, "profile", "test", str(broken))
    for done in (crawl, tested):
        assert done.returncode == 1, done.stderr
        assert "broken.yaml: fields.price.jsonld: invalid jsonld JMESPath 'offers[0.price'" in done.stderr
        assert "Traceback" not in done.stderr and "exception was never retrieved" not in done.stderr
        assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr
