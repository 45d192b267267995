"""Structured data a page embeds (JSON-LD, microdata, RDFa, OpenGraph) as a source of fields.

extruct reads the markup (``uniform=True`` gives microdata and RDFa the JSON-LD shape); a field's
path is JMESPath, evaluated on the page's product node: the first item typed Product,
MusicAlbum or MusicRelease (also inside ``@graph`` or ``mainEntity``), else the first item.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

import jmespath
from jmespath.parser import ParsedResult
from scrapy.http import TextResponse

logger = logging.getLogger(__name__)

SYNTAXES = {"jsonld": "json-ld", "microdata": "microdata", "opengraph": "opengraph", "rdfa": "rdfa"}
PRODUCT_TYPES = frozenset({"Product", "MusicAlbum", "MusicRelease", "IndividualProduct", "ProductModel",
                           "ProductGroup"})


@lru_cache(maxsize=512)
def compiled(query: str) -> ParsedResult:
    """The compiled JMESPath (raises jmespath.exceptions.JMESPathError when it is not one)."""
    return jmespath.compile(query)


@dataclass
class StructuredData:
    """A page's product node per syntax, and what could not be read."""

    nodes: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, response: TextResponse, kinds: frozenset[str]) -> StructuredData:
        import extruct  # with its parsers (rdflib, mf2py, bs4): only for profiles that read structured data

        data = cls()
        for kind in sorted(kinds):
            try:
                found = extruct.extract(response.text, base_url=response.url, syntaxes=[SYNTAXES[kind]],
                                        uniform=True, errors="strict")
            except Exception as exc:  # extruct raises what its parsers raise (JSON, lxml, rdflib)
                data.problems.append(f"{kind}: cannot read the page's {SYNTAXES[kind]} markup: "
                                     f"{type(exc).__name__}: {str(exc)[:200]}")
                continue
            node = product_node(found.get(SYNTAXES[kind]) or [])
            if node is not None:
                data.nodes[kind] = node
        return data

    def search(self, kind: str, query: str) -> list[str]:
        node = self.nodes.get(kind)
        return [] if node is None else strings(compiled(query).search(node))


def product_node(items: list[Any]) -> dict[str, Any] | None:
    """Breadth first, the first item typed as a product; else the first item."""
    queue: deque[Any] = deque(items)
    first = next((item for item in items if isinstance(item, dict)), None)
    while queue:
        item = queue.popleft()
        if isinstance(item, list):
            queue.extend(item)
        elif isinstance(item, dict):
            if PRODUCT_TYPES & set(types(item)):
                return item
            queue.extend(v for v in item.values() if isinstance(v, dict | list))
    return first


def types(item: dict[str, Any]) -> list[str]:
    """``@type`` as bare names: "schema:Product" and "http://schema.org/Product" are "Product"."""
    found = item.get("@type") or []
    names = [found] if isinstance(found, str) else [t for t in found if isinstance(t, str)]
    return [n.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1] for n in names]


def strings(value: Any) -> list[str]:
    """A JMESPath result as field values: an entity gives its name, a list its members."""
    if value is None or value == "":
        return []
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, int | float):
        return [format(Decimal(str(value)), "f")]
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for member in value for text in strings(member)]
    if isinstance(value, dict):
        for key in ("name", "@value", "@id"):
            if value.get(key) not in (None, ""):
                return strings(value[key])
        return []
    return [json.dumps(value)]
