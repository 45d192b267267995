"""Text rules that split a product name into catalogue number, artists and title, for shops whose
markup holds only a name ("FLD001 // Gareth Wild - Common Assault EP").

A profile names rules under ``title_rules:``: bundled ones by name (:data:`BUNDLED`), or its own
regular expressions with the named groups ``title`` and any of ``artists``, ``catalog_number``,
``label``, ``format``. The first rule that matches the whole name wins; a group fills its field
only when the page gave that field no value, except ``title``, which replaces the name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GROUPS = ("title", "artists", "catalog_number", "label", "format")
_CATNO = r"(?P<catalog_number>[A-Z][A-Z0-9]{1,9}(?:[ .-]?[A-Z0-9]{1,6})?)"
_SEP = r"\s+[-–—]\s+"
BUNDLED: dict[str, str] = {
    # "FLD001 // Gareth Wild - Common Assault EP"
    "catno_slashes_artist_title": rf"^{_CATNO}\s*//\s*(?P<artists>.+?){_SEP}(?P<title>.+)$",
    # "Gareth Wild - Common Assault EP [FLD001]" (or round brackets)
    "artist_title_catno": rf"^(?P<artists>.+?){_SEP}(?P<title>.+?)\s*[\[(]{_CATNO}[\])]$",
    # "[FLD001] Gareth Wild - Common Assault EP"
    "catno_artist_title": rf"^[\[(]{_CATNO}[\])]\s*(?P<artists>.+?){_SEP}(?P<title>.+)$",
    # "Gareth Wild - Common Assault EP"
    "artist_title": rf"^(?P<artists>.+?){_SEP}(?P<title>.+)$",
}
DEFAULT_RULES = ("catno_slashes_artist_title", "artist_title_catno", "catno_artist_title")


@dataclass(frozen=True)
class TitleRule:
    name: str
    pattern: re.Pattern[str]

    def split(self, text: str) -> dict[str, str] | None:
        found = self.pattern.match(text.strip())
        if found is None:
            return None
        return {k: v.strip() for k, v in found.groupdict().items() if v and v.strip()}


def compile_rule(spec: str) -> TitleRule:
    """A bundled rule's name, or a pattern; raises ValueError saying what is wrong."""
    pattern = BUNDLED.get(spec, spec)
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a bundled rule ({', '.join(BUNDLED)}) and not a regular expression: {exc}") from exc
    unknown = set(compiled.groupindex) - set(GROUPS)
    if "title" not in compiled.groupindex or unknown:
        raise ValueError(f"a title rule needs the named group 'title' and only groups from {list(GROUPS)}"
                         + (f" (unknown: {sorted(unknown)})" if unknown else ""))
    return TitleRule(spec if spec in BUNDLED else "custom", compiled)


def split_title(text: str, rules: tuple[TitleRule, ...]) -> dict[str, str]:
    """The groups of the first rule that matches ``text``; empty when none does."""
    for rule in rules:
        found = rule.split(text)
        if found and found.get("title"):
            return found
    return {}
