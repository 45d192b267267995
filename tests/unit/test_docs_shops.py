"""Every profile fragment in docs/shops.md is a valid part of a profile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from recordhound.sources import load_profile

DOC = Path(__file__).parents[2] / "docs" / "shops.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.split(":", 1)[0] for b in BLOCKS])
def test_each_yaml_block_of_the_page_loads_as_part_of_a_profile(block: str, tmp_path: Path) -> None:
    document = {"name": "doc", "base_url": "https://shop.example/", "start_urls": ["/"],
                "links": {"product": "a::attr(href)"}, "structured": "schema.org", **yaml.safe_load(block)}
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(document))
    load_profile(str(path))


def test_the_page_has_its_examples() -> None:
    assert len(BLOCKS) >= 4
