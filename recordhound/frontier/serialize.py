"""Requests to and from JSON (``Request.to_dict`` / ``request_from_dict``), never pickle.

``Request.to_dict(spider=...)`` finds the name of a callback by listing every member of the
spider (``inspect.getmembers``, properties evaluated) on each call: a third of the frontier's
cost per page. ``dumps`` builds the same dict with the spider's method names listed once.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

from recordhound.exceptions import RecordhoundError

# meta keys that only make sense in this process (the last: hostgate.STARTED_META, a monotonic time)
LOCAL_META = ("recordhound_frontier_id", "recordhound_parent_id", "recordhound_started")
# scrapy-playwright's keys hold live objects (PageMethod, Page); the render middleware puts
# them back from the plain ``recordhound_render`` spec on every download.
LOCAL_PREFIXES = ("playwright", "_playwright")


class UnserializableRequest(RecordhoundError):
    def __init__(self, request: Request, problem: str) -> None:
        super().__init__(f"cannot store {request!r} in the frontier: {problem}")


_method_names: WeakKeyDictionary[Spider, dict[Callable[..., Any], str]] = WeakKeyDictionary()


def dumps(request: Request, spider: Spider) -> str:
    try:
        data = to_dict(request, spider)
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


def to_dict(request: Request, spider: Spider) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, its callback names looked up in a table of the spider's
    methods (Scrapy's own search, first name in order, when one is not in it: it raises then)."""
    names = _method_names.get(spider)
    if names is None:
        names = _method_names[spider] = _methods(spider)
    callback, errback = _name(names, request.callback, spider), _name(names, request.errback, spider)
    if callback is None or errback is None:
        return request.to_dict(spider=spider)
    data: dict[str, Any] = {"url": request.url, "callback": callback[0], "errback": errback[0],
                            "headers": dict(request.headers)}
    for attr in request.attributes:
        data.setdefault(attr, getattr(request, attr))
    if type(request) is not Request:
        data["_class"] = request.__module__ + "." + type(request).__name__
    return data


def _methods(spider: Spider) -> dict[Callable[..., Any], str]:
    """Each method function of the spider → the first of its names (``getmembers`` sorts by name)."""
    names: dict[Callable[..., Any], str] = {}
    for name, method in inspect.getmembers(spider, predicate=inspect.ismethod):
        names.setdefault(method.__func__, name)
    return names


def _name(names: dict[Callable[..., Any], str], func: Any, spider: Spider) -> tuple[Any] | None:
    """(what to store,) for a callback or errback; None: not a method in the table, or the name
    no longer gives that method (reassigned on the instance: Scrapy's own search decides)."""
    if not callable(func):
        return (func,)  # None, or a name already
    function = getattr(func, "__func__", None)
    name = names.get(function)  # type: ignore[arg-type]
    if name is None or getattr(getattr(spider, name, None), "__func__", None) is not function:
        return None
    return (name,)


def loads(payload: str, spider: Spider) -> Request:
    data: dict[str, Any] = json.loads(payload)
    data["body"] = data["body"].encode("latin-1")
    data["headers"] = {k.encode("latin-1"): [v.encode("latin-1") for v in vs] for k, vs in data["headers"].items()}
    return request_from_dict(data, spider=spider)


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
