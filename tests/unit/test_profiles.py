from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recordhound.exceptions import ProfileError
from recordhound.sources import find_profile, load_profile


def _demo_document() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(find_profile("demo").read_text())


def test_bundled_demo_profile_loads() -> None:
    profile = load_profile("demo")
    assert profile.name == "demo"
    assert profile.links["pagination"].priority > profile.links["product"].priority
    assert profile.fields["title"].required


def _write(tmp_path: Path, document: dict) -> str:  # type: ignore[type-arg]
    path = tmp_path / "shop.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


@pytest.mark.parametrize(("change", "key", "problem"), [
    (lambda d: d["fields"].pop("title"), "fields.title", "required field is missing"),
    (lambda d: d["fields"].update(colour=".c::text"), "fields.colour", "unknown key"),
    (lambda d: d["fields"].update(title={"css": "h1[[["}), "fields.title.css", "invalid css selector"),
    (lambda d: d["fields"].update(year={"xpath": "//span[@"}), "fields.year.xpath", "invalid xpath"),
    (lambda d: d.update(base_url="ftp://shop"), "base_url", "absolute http"),
    (lambda d: d["links"].pop("product"), "links", "needs a 'product' link kind"),
    (lambda d: d["links"]["product"].update(priority="high"), "links.product.priority", "whole number"),
    (lambda d: d.update(price={"default_currency": "euro"}), "price.default_currency", "ISO 4217"),
    (lambda d: d.update(start_urls=[]), "start_urls", "non-empty list"),
    (lambda d: d["fields"].update(title={"css": "h1::text", "split": [","]}), "fields.title.split", "only applies"),
])
def test_invalid_profile_names_file_and_key(tmp_path: Path, change, key: str, problem: str) -> None:  # type: ignore[no-untyped-def]
    document = _demo_document()
    change(document)
    path = _write(tmp_path, document)
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    assert caught.value.key == key
    assert problem in str(caught.value)
    assert path in str(caught.value)


def test_unknown_source_and_broken_yaml(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="no profile for source 'nope'"):
        load_profile("nope", [str(tmp_path)])
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(ProfileError, match="not valid YAML"):
        load_profile(str(broken))


def test_user_profile_folder_wins_over_bundled(tmp_path: Path) -> None:
    document = _demo_document()
    document["start_urls"] = ["/catalog?page=2"]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(document))
    assert load_profile("demo", [str(tmp_path)]).start_urls == ("/catalog?page=2",)
