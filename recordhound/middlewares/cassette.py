"""Record a crawl's responses into a betamax-format cassette, or replay them without network.

    scrapy crawl catalog -a source=demo -s RECORDHOUND_CASSETTE=demo.json -s RECORDHOUND_CASSETTE_MODE=record
    scrapy crawl catalog -a source=demo -s RECORDHOUND_CASSETTE=demo.json        # replay (the default)

Responses for one (method, URL) are replayed in the order they were recorded (a page that
answered 500 then 200 does so again); a request missing from the cassette is an error that
names the URL and the cassette.
"""

from __future__ import annotations

import base64
import json
import logging
from collections import defaultdict, deque
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.responsetypes import responsetypes

from recordhound.errors import record_error
from recordhound.exceptions import ConfigError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)
MODES = ("replay", "record")


class CassetteMiddleware:
    def __init__(self, crawler: Crawler, path: str, mode: str) -> None:
        self.crawler, self.path, self.mode = crawler, path, mode
        self.replies: dict[tuple[str, str], deque[dict[str, Any]]] = defaultdict(deque)
        self.recorded: list[dict[str, Any]] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CassetteMiddleware:
        path = crawler.settings.get("RECORDHOUND_CASSETTE")
        if not path:
            raise NotConfigured  # the normal case: no message, so Scrapy logs no WARNING
        mode = str(crawler.settings.get("RECORDHOUND_CASSETTE_MODE") or "replay")
        if mode not in MODES:
            raise ConfigError(f"RECORDHOUND_CASSETTE_MODE must be one of {', '.join(MODES)}, got {mode!r}")
        middleware = cls(crawler, str(path), mode)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_opened(self) -> None:
        if self.mode == "record":
            return
        try:
            interactions = json.loads(Path(self.path).read_text(encoding="utf-8"))["http_interactions"]
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"RECORDHOUND_CASSETTE={self.path}: cannot read a cassette ({exc}); record one "
                              f"with -s RECORDHOUND_CASSETTE_MODE=record") from exc
        for interaction in interactions:
            request = interaction["request"]
            self.replies[(request["method"], request["uri"])].append(interaction["response"])
        logger.info("Replaying %d responses from cassette %s", len(interactions), self.path)

    def process_request(self, request: Request) -> Response | None:
        if self.mode != "replay":
            return None
        queue = self.replies.get((request.method, request.url))
        if not queue and urlparse(request.url).path == "/robots.txt":  # none recorded: the shop had none
            return Response(request.url, status=404, request=request, flags=["cassette"])
        if not queue:
            message = f"{request.method} {request.url} is not in cassette {self.path}"
            record_error(self.crawler, "cassette_missing", request.url, message)
            raise IgnoreRequest(message)
        recorded = queue.popleft() if len(queue) > 1 else queue[0]
        return _response(request, recorded)

    def process_response(self, request: Request, response: Response) -> Response:
        if self.mode == "record" and "cassette" not in response.flags:
            self.recorded.append(_interaction(request, response))
        return response

    def spider_closed(self) -> None:
        if self.mode == "record":
            cassette = {"http_interactions": self.recorded, "recorded_with": "recordhound"}
            Path(self.path).write_text(json.dumps(cassette, indent=1, ensure_ascii=False), encoding="utf-8")
            logger.info("Recorded %d responses into cassette %s", len(self.recorded), self.path)


def load_responses(path: str) -> list[Response]:
    """Every response of a cassette, as Scrapy responses (for `recordhound profile test`)."""
    interactions = json.loads(Path(path).read_text(encoding="utf-8"))["http_interactions"]
    return [_response(Request(i["request"]["uri"], method=i["request"]["method"]), i["response"])
            for i in interactions]


def _headers(headers: Any) -> dict[str, list[str]]:
    return {k.decode("latin-1"): [v.decode("latin-1") for v in vs] for k, vs in headers.items()}


def _body(body: bytes, encoding: str = "utf-8") -> dict[str, str]:
    try:
        return {"encoding": encoding, "string": body.decode(encoding)}
    except UnicodeDecodeError:
        return {"encoding": encoding, "base64_string": base64.b64encode(body).decode()}


def _interaction(request: Request, response: Response) -> dict[str, Any]:
    return {
        "request": {"body": _body(request.body), "headers": _headers(request.headers),
                    "method": request.method, "uri": request.url},
        "response": {"body": _body(response.body), "headers": _headers(response.headers),
                     "status": {"code": response.status, "message": ""}, "url": response.url},
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S"),
    }


def _response(request: Request, recorded: dict[str, Any]) -> Response:
    body_field = recorded["body"]
    body = (base64.b64decode(body_field["base64_string"]) if "base64_string" in body_field
            else body_field["string"].encode(body_field.get("encoding") or "utf-8"))
    headers = {k: v for k, v in recorded["headers"].items()}
    cls = responsetypes.from_args(headers=headers, url=recorded["url"], body=body)
    return cls(url=recorded["url"], status=recorded["status"]["code"], headers=headers, body=body,
               request=request, flags=["cassette"])
