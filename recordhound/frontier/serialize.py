"""Requests to and from JSON (``Request.to_dict`` / ``request_from_dict``), never pickle."""

from __future__ import annotations

import json
from typing import Any

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

from recordhound.exceptions import RecordhoundError

LOCAL_META = ("recordhound_frontier_id", "recordhound_parent_id")  # meta keys that only make sense in this process
# scrapy-playwright's keys hold live objects (PageMethod, Page); the render middleware puts
# them back from the plain ``recordhound_render`` spec on every download.
LOCAL_PREFIXES = ("playwright", "_playwright")


class UnserializableRequest(RecordhoundError):
    def __init__(self, request: Request, problem: str) -> None:
        super().__init__(f"cannot store {request!r} in the frontier: {problem}")


def dumps(request: Request, spider: Spider) -> str:
    try:
        data = request.to_dict(spider=spider)
    except ValueError as exc:  # callback/errback that is not a spider method
        raise UnserializableRequest(request, str(exc)) from exc
    data["meta"] = {k: v for k, v in data["meta"].items()
                    if k not in LOCAL_META and not k.startswith(LOCAL_PREFIXES)}
    data["body"] = data["body"].decode("latin-1")
    data["headers"] = {_text(k): [_text(v) for v in values] for k, values in data["headers"].items()}
    try:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UnserializableRequest(request, f"meta/cb_kwargs are not JSON: {exc}") from exc


def loads(payload: str, spider: Spider) -> Request:
    data: dict[str, Any] = json.loads(payload)
    data["body"] = data["body"].encode("latin-1")
    data["headers"] = {k.encode("latin-1"): [v.encode("latin-1") for v in vs] for k, vs in data["headers"].items()}
    return request_from_dict(data, spider=spider)


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
