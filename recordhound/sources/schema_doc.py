"""A profile document being validated: each value with the file and dotted key it came from, and
the selector specs every part of a profile shares (``css`` shorthand or a mapping of kinds)."""

from __future__ import annotations

from typing import Any

from jmespath.exceptions import JMESPathError
from lxml import etree
from parsel.csstranslator import HTMLTranslator

from recordhound.exceptions import ProfileError
from recordhound.sources.profile import STRUCTURED_KINDS, SelectorSpec
from recordhound.sources.structured import compiled

_CSS = HTMLTranslator()


class Doc:
    """A mapping being validated, with the file and dotted key it came from."""

    def __init__(self, path: str, key: str, value: Any) -> None:
        self.path, self.key, self.value = path, key, value

    def fail(self, problem: str, key: str | None = None) -> ProfileError:
        return ProfileError(self.path, key or self.key or "(top level)", problem)

    def child(self, name: str) -> Doc:
        return Doc(self.path, f"{self.key}.{name}" if self.key else name, self.value.get(name))

    def mapping(self, allowed: set[str] | None = None) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.fail(f"expected a mapping, got {type(self.value).__name__}")
        unknown = sorted(set(map(str, self.value)) - allowed) if allowed is not None else []
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r}; expected one of {sorted(allowed or ())}",
                            f"{self.key}.{unknown[0]}" if self.key else unknown[0])
        return self.value

    def string(self, *, required: bool = True) -> str | None:
        if self.value is None and not required:
            return None
        if not isinstance(self.value, str) or not self.value.strip():
            raise self.fail(f"expected a non-empty string, got {self.value!r}")
        return self.value

    def strings(self) -> tuple[str, ...]:
        items = [self.value] if isinstance(self.value, str) else self.value
        if not isinstance(items, list) or not items or not all(isinstance(i, str) and i for i in items):
            raise self.fail(f"expected a string or a non-empty list of strings, got {self.value!r}")
        return tuple(items)

    def integer(self, default: int) -> int:
        if self.value is None:
            return default
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.fail(f"expected a whole number, got {self.value!r}")
        return self.value

    def seconds(self) -> float | None:
        """A number above 0 (seconds, or a rate), or None when absent."""
        if self.value is None:
            return None
        if isinstance(self.value, bool) or not isinstance(self.value, int | float) or self.value <= 0:
            raise self.fail(f"expected a number above 0, got {self.value!r}")
        return float(self.value)

    def positive_integer(self) -> int | None:
        if self.value is None:
            return None
        if isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 1:
            raise self.fail(f"expected a whole number of 1 or more, got {self.value!r}")
        return self.value

    def boolean(self, default: bool) -> bool:
        if self.value is None:
            return default
        if not isinstance(self.value, bool):
            raise self.fail(f"expected true or false, got {self.value!r}")
        return self.value


def selectors(doc: Doc, kinds: tuple[str, ...] = ("css", "xpath")) -> tuple[SelectorSpec, ...]:
    """``"css"`` shorthand, or a mapping of selector kinds (each a string or a list), tried in
    the order written: e.g. ``{jsonld: "offers.price", css: ".price::text"}``."""
    if isinstance(doc.value, str):
        return (checked(doc, "css", doc.value),)
    spec = doc.mapping({*kinds, "priority", "required", "split"})
    found: list[SelectorSpec] = []
    for kind in (k for k in spec if k in kinds and spec[k] is not None):
        found += [checked(doc.child(kind), kind, q) for q in doc.child(kind).strings()]
    if not found:
        raise doc.fail(f"needs a selector: one of the keys {list(kinds)}")
    return tuple(found)


def checked(doc: Doc, kind: str, query: str) -> SelectorSpec:
    try:
        if kind == "css":
            _CSS.css_to_xpath(query)
        elif kind == "xpath":
            etree.XPath(query)
        else:
            compiled(query)
    except (JMESPathError, Exception) as exc:  # cssselect, lxml and jmespath raise unrelated types
        what = "JMESPath" if kind in STRUCTURED_KINDS else "selector"
        raise doc.fail(f"invalid {kind} {what} {query!r}: {str(exc).splitlines()[0].removesuffix(', for expression:')}") from exc
    return SelectorSpec(kind, query)
