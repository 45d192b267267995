"""Structured data as a field source: extruct's output, the product node, JMESPath paths."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from scrapy.http import HtmlResponse

from recordhound.exceptions import ProfileError
from recordhound.normalize import Outcome, normalize_release
from recordhound.sources import load_profile
from recordhound.sources.extract import extract_release
from recordhound.sources.structured import product_node, strings

PAGE = """<html><head><script type="application/ld+json">
{"@context": "https://schema.org", "@graph": [{"@type": "WebPage", "name": "Shop"},
 {"@type": ["Product", "MusicRelease"], "name": "Blue \\u00c9t\\u00e9", "sku": "X-1",
  "byArtist": [{"@type": "MusicGroup", "name": "A"}, {"@type": "MusicGroup", "name": "B"}],
  "brand": {"@type": "Organization", "name": "Lbl"}, "genre": "Dub", "datePublished": "1999-01-02",
  "offers": [{"@type": "Offer", "price": "1234.50", "priceCurrency": "GBP",
              "availability": "https://schema.org/OutOfStock"}]}]}
</script></head><body><h1 class="t">Visible</h1><p class="price">£1,234.50</p></body></html>"""


def _response(body: str = PAGE) -> HtmlResponse:
    return HtmlResponse("https://shop.example/p/1", body=body.encode(), encoding="utf-8")


def _profile(tmp_path: Path, **extra: object) -> Path:
    document = {"name": "s", "base_url": "https://shop.example/", "start_urls": ["/"],
                "links": {"product": "a::attr(href)"}, **extra}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return path


def test_schema_org_default_fills_every_field_from_json_ld(tmp_path: Path) -> None:
    profile = load_profile(str(_profile(tmp_path, structured="schema.org")))
    raw = extract_release(_response(), profile)
    assert (raw.title, raw.artists, raw.label, raw.external_id) == ("Blue Été", ["A", "B"], "Lbl", "X-1")
    assert (raw.price, raw.currency, raw.year, raw.styles, raw.in_stock) == (
        "1234.50", "GBP", "1999-01-02", ["Dub"], "https://schema.org/OutOfStock")
    assert "price" in raw.structured


def test_named_fields_win_and_selectors_fall_back_in_the_order_written(tmp_path: Path) -> None:
    fields = {"title": {"jsonld": "missingKey", "css": "h1.t::text"}, "price": {"css": ".price::text"}}
    profile = load_profile(str(_profile(tmp_path, structured="schema.org", fields=fields)))
    raw = extract_release(_response(), profile)
    assert (raw.title, raw.price, raw.artists) == ("Visible", "£1,234.50", ["A", "B"])
    assert "price" not in raw.structured


def test_invalid_paths_and_standards_are_profile_errors(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"fields.title.jsonld: invalid jsonld JMESPath 'name\['"):
        load_profile(str(_profile(tmp_path, fields={"title": {"jsonld": "name["}, "artists": ".a::text"})))
    with pytest.raises(ProfileError, match="structured: unknown structured data standard 'opengraph.org'"):
        load_profile(str(_profile(tmp_path, structured="opengraph.org")))
    with pytest.raises(ProfileError, match=r"price.currencies.gbp: expected an ISO 4217 code"):
        load_profile(str(_profile(tmp_path, structured="schema.org", price={"currencies": {"gbp": {}}})))


def test_malformed_json_ld_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    from recordhound.sources.check import check_profile

    profile = load_profile(str(_profile(tmp_path, structured="schema.org")))
    broken = PAGE.replace('"sku": "X-1",', '"sku": "X-1",,')
    report = check_profile(profile, _response(broken))
    assert any("cannot read the page's json-ld markup" in line for line in report.lines)
    assert "item: rejected: required field(s) missing: title, artists" in str(report)


def test_values_become_strings_and_entities_their_names() -> None:
    assert strings({"@type": "Person", "name": "X"}) == ["X"]
    assert strings([{"name": "A"}, "B", 3, 1.5, None, True]) == ["A", "B", "3", "1.5", "true"]
    node = product_node([{"@type": "WebPage", "mainEntity": {"@type": "http://schema.org/MusicAlbum", "name": "N"}}])
    assert node is not None and node["name"] == "N"


SCHEMA = "https://schema.org/"


def _normalized(tmp_path: Path, ld: Any) -> Outcome:
    profile = load_profile(str(_profile(tmp_path, structured="schema.org")))
    page = f'<html><head><script type="application/ld+json">{json.dumps(ld)}</script></head><body></body></html>'
    return normalize_release(extract_release(_response(page), profile), profile)


def _offers(outcome: Outcome) -> list[tuple[Any, ...]]:
    assert outcome.release is not None, outcome
    return [(o.external_id, o.format, o.condition, o.price, o.currency, o.availability)
            for o in outcome.release.offers]


def _tago_mago(*offers: dict[str, Any]) -> dict[str, Any]:
    return {"@context": "https://schema.org", "@type": "Product", "name": "Tago Mago", "byArtist": "Can",
            "sku": "CAN-1", "offers": list(offers)}




def _specs(*pairs: tuple[str | None, str]) -> list[dict[str, str]]:
    return [{"@type": "UnitPriceSpecification", "price": price, "priceCurrency": "EUR",
             **({"priceType": kind} if kind else {})} for kind, price in pairs]


def test_a_crossed_out_price_specification_is_not_the_price(tmp_path: Path) -> None:
    offers = [{"@type": "Offer", "sku": sku, "name": name, "priceSpecification": specs} for sku, name, specs in (
        ("LP1", "LP", _specs((f"{SCHEMA}StrikethroughPrice", "30.00"), (None, "20.00"))),
        ("CD1", "CD", _specs(("ListPrice", "14.00"), (f"{SCHEMA}SalePrice", "10.00"))),
        ("S1", '7"', _specs((None, "6.00"), ("http://schema.org/MSRP", "8.00"))),
        ("C1", "Cassette", _specs(("StrikethroughPrice", "9.00"))))]
    assert _offers(_normalized(tmp_path, _tago_mago(*offers))) == [
        ("LP1", "LP", None, Decimal("20.00"), "EUR", None), ("CD1", "CD", None, Decimal("10.00"), "EUR", None),
        ("S1", '7"', None, Decimal("6.00"), "EUR", None), ("C1", "Cassette", None, None, None, None)]


def test_an_album_release_with_an_aggregate_offer_gives_its_low_price(tmp_path: Path) -> None:
    def release(key: str, fmt: str, low: str, high: str) -> dict[str, Any]:
        return {"@type": "MusicRelease", "@id": f"https://shop.example/p/1#{key}", "name": key.upper(),
                "musicReleaseFormat": fmt, "offers": {"@type": "AggregateOffer", "lowPrice": low,
                                                      "highPrice": high, "priceCurrency": "EUR", "offerCount": 3}}
    ld = {"@context": "https://schema.org", "@type": "MusicAlbum", "name": "Tago Mago",
          "byArtist": {"@type": "MusicGroup", "name": "Can"},
          "albumRelease": [release("lp", "VinylFormat", "25.00", "40.00"), release("cd", "CDFormat", "9.00", "15.00")]}
    outcome = _normalized(tmp_path, ld)
    assert _offers(outcome) == [("https://shop.example/p/1#lp", "LP", None, Decimal("25.00"), "EUR", None),
                                ("https://shop.example/p/1#cd", "CD", None, Decimal("9.00"), "EUR", None)]
    assert outcome.problems == []

