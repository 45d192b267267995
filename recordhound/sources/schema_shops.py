"""The parts of a profile for real shops: ``offers:``, ``title_rules:``, ``sitemap:``, ``robots:``."""

from __future__ import annotations

import re
from types import MappingProxyType

from recordhound.sources.profile import OFFER_FIELDS, OffersSpec, RobotsSpec, SitemapSpec
from recordhound.sources.schema_doc import Doc, selectors
from recordhound.sources.title_rules import TitleRule, compile_rule


def offers(doc: Doc) -> OffersSpec | None:
    """``offers: {each: "ul.formats li", fields: {format: ".format::text", price: ".price::text"}}``"""
    if doc.value is None:
        return None
    doc.mapping({"each", "fields"})
    each = selectors(doc.child("each"))[0]
    fields = doc.child("fields")
    fields.mapping(set(OFFER_FIELDS))
    specs = {name: selectors(fields.child(name)) for name in fields.value}
    if not specs:
        raise fields.fail(f"name at least one offer field ({', '.join(OFFER_FIELDS)})")
    return OffersSpec(each, MappingProxyType(specs))


def title_rules(doc: Doc) -> tuple[TitleRule, ...]:
    """``title_rules: [catno_slashes_artist_title, "(?P<artists>.+?) - (?P<title>.+)"]``"""
    if doc.value is None:
        return ()
    rules = []
    for index, spec in enumerate(doc.strings()):
        try:
            rules.append(compile_rule(spec))
        except ValueError as exc:
            raise doc.fail(str(exc), f"{doc.key}[{index}]") from exc
    return tuple(rules)


def sitemap(doc: Doc) -> SitemapSpec | None:
    """``sitemap: true`` (robots.txt's Sitemap: lines), a URL, or {urls, follow, deny, only}."""
    if doc.value is None or doc.value is False:
        return None
    if doc.value is True:
        return SitemapSpec()
    if isinstance(doc.value, str | list):
        return SitemapSpec(doc.strings())
    doc.mapping({"urls", "follow", "deny", "only"})
    patterns = {}
    for key in ("follow", "deny"):
        child = doc.child(key)
        found = () if child.value is None else child.strings()
        for pattern in found:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise child.fail(f"not a regular expression {pattern!r}: {exc}") from exc
        patterns[key] = found
    urls = doc.child("urls")
    return SitemapSpec(() if urls.value is None else urls.strings(), patterns["follow"], patterns["deny"],
                       doc.child("only").boolean(False))


def robots(doc: Doc) -> RobotsSpec:
    """``robots: {obey: false, reason: "crawled with the shop's written permission"}``"""
    if doc.value is None:
        return RobotsSpec()
    doc.mapping({"obey", "reason"})
    obey = doc.child("obey").boolean(True)
    reason = doc.child("reason").string(required=False) or ""
    if not obey and not reason.strip():
        raise doc.fail("robots.txt may be ignored only with a stated reason (robots.reason)", f"{doc.key}.reason")
    return RobotsSpec(obey, reason)
