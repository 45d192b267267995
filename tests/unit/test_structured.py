"""Structured data as a field source: extruct's output, the product node, JMESPath paths."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from scrapy.http import HtmlResponse

from recordhound.exceptions import ProfileError
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
