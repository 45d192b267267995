"""URLs pushed into a crawl from outside (`recordhound frontier add`, the admin's form).

They go through the crawl's own store in one ``commit``: the fingerprint is marked seen in the
same atomic step that queues the request (invariant 1), so a URL the crawl has seen is dropped
and a new one is leased by whichever node runs next, or by a following node at once. The
request is the one the catalog spider would have made for a link of that kind (its callback
named, its meta plain JSON), so a node cannot tell it from its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from scrapy import Request
from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from recordhound.config import FrontierConfig
from recordhound.exceptions import RecordhoundError
from recordhound.frontier.backend import Entry
from recordhound.frontier.dupefilter import FINGERPRINT_BYTES
from recordhound.frontier.factory import make_backend
from recordhound.frontier.registry import KIND_META
from recordhound.middlewares.render import RENDER_META
from recordhound.sources.profile import Profile

CALLBACKS = {"product": "parse_product", "listing": "parse_listing"}  # link kind → catalog spider method
ERRBACK = "on_error"
CALL_TIMEOUT_SECONDS = 30.0  # a command may wait longer for the store than the reactor does


class OutsideUrlError(RecordhoundError):
    """A URL that cannot go into a crawl; the message names it."""


@dataclass(frozen=True)
class Added:
    crawl: str
    queued: int
    seen: int


def entries(profile: Profile, urls: Iterable[str], priority: int, kind: str,
            settings: BaseSettings) -> list[Entry]:
    """One frontier entry per URL, as the catalog spider would queue a ``kind`` link."""
    if kind not in CALLBACKS:
        raise OutsideUrlError(f"unknown link kind {kind!r}; use one of {', '.join(CALLBACKS)}")
    fingerprinter = load_object(settings["REQUEST_FINGERPRINTER_CLASS"])(None)
    found = []
    for url in urls:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise OutsideUrlError(f"expected an absolute http(s) URL, got {url!r}")
        meta: dict[str, Any] = {KIND_META: kind}
        spec = profile.render.get(kind)
        if spec is not None:
            meta[RENDER_META] = spec.meta()
        request = Request(url, priority=priority, meta=meta)
        fingerprint = fingerprinter.fingerprint(request)[:FINGERPRINT_BYTES]
        found.append(Entry(fingerprint, priority, _payload(request, CALLBACKS[kind])))
    return found


def _payload(request: Request, callback: str) -> str:
    """What ``serialize.dumps`` writes for the spider's own request (a callback by name)."""
    data = request.to_dict()
    data.update(callback=callback, errback=ERRBACK, body=data["body"].decode("latin-1"), headers={})
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def add(config: FrontierConfig, crawl: str, found: list[Entry]) -> Added:
    """Queue ``found`` in ``crawl``'s frontier; the seen-set drops those it knows (and repeats)."""
    unique = list({entry.fingerprint: entry for entry in found}.values())
    backend = make_backend(config, crawl, timeout=CALL_TIMEOUT_SECONDS)
    backend.open()
    try:
        committed = backend.commit(unique, [], [])
    finally:
        backend.close()
    return Added(crawl, committed.queued, len(found) - committed.queued)


def crawl_name(config: FrontierConfig, profile: Profile) -> str:
    """The crawl a node of this profile joins (as the scheduler names it)."""
    return config.crawl_id or profile.name
