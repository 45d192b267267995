"""CSRF protection for every state-changing request of the admin.

The token lives in the (signed, HttpOnly) session; forms carry it in a hidden ``csrf_token``
field, scripts in an ``X-CSRF-Token`` header. The middleware sits inside the session
middleware and checks every POST/PUT/PATCH/DELETE before any view sees it, so no view can
forget to.
"""

from __future__ import annotations

import hmac
import re
import secrets
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import PlainTextResponse

SESSION_KEY = "csrf_token"
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
MAX_FORM_BYTES = 1 << 20
MULTIPART_TOKEN = re.compile(rb'Content-Disposition: form-data; name="csrf_token"\r\n\r\n([A-Za-z0-9_-]+)\r\n', re.I)


def csrf_token(request: Request) -> str:
    """This session's token (created on first use); templates put it in every form."""
    token = request.session.get(SESSION_KEY)
    if not token:
        token = request.session[SESSION_KEY] = secrets.token_urlsafe(32)
    return str(token)


def rotate(request: Request) -> None:
    """A new token after login: a token planted before it is worthless."""
    request.session[SESSION_KEY] = secrets.token_urlsafe(32)


class CSRFMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in UNSAFE:
            await self.app(scope, receive, send)
            return
        body, chunks = b"", []
        while True:
            message = await receive()
            chunks.append(message)
            body += message.get("body", b"")
            if not message.get("more_body") or len(body) > MAX_FORM_BYTES:
                break
        expected = (scope.get("session") or {}).get(SESSION_KEY)
        sent = _sent_token(scope, body)
        if not expected or not sent or not hmac.compare_digest(str(expected), sent):
            response = PlainTextResponse(
                "CSRF check failed: the form's token is missing or out of date. Reload the page and try again.",
                status_code=403)
            await response(scope, receive, send)
            return
        replay = iter(chunks)

        async def replayed() -> dict[str, Any]:
            try:
                return next(replay)
            except StopIteration:
                return await receive()

        await self.app(scope, replayed, send)


def _sent_token(scope: dict[str, Any], body: bytes) -> str | None:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
    if headers.get("x-csrf-token"):
        return headers["x-csrf-token"]
    if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        values = parse_qs(body.decode("utf-8", "replace")).get("csrf_token")
        return values[0] if values else None
    if headers.get("content-type", "").startswith("multipart/form-data"):  # an upload: the token is a part
        found = MULTIPART_TOKEN.search(body[:MAX_FORM_BYTES])
        return found.group(1).decode("latin-1") if found else None
    return None
