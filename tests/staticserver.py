"""A real HTTP server on 127.0.0.1, port 0, serving fixed bytes per path and counting requests.

    with StaticServer({"/sitemap.xml": ("application/xml", body)}) as server:
        server.url                 # http://127.0.0.1:PORT/
        server.hits["/sitemap.xml"]

A path it does not know answers 404. Threads only (one per connection). ``headers``: more response
headers per path (``{"/b.xml": {"Content-Encoding": "gzip"}}``); ``statuses``: a status other than 200
per path (``server.statuses["/robots.txt"] = 503``; changed at will).
"""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


class StaticServer:
    def __init__(self, pages: dict[str, tuple[str, bytes]], headers: dict[str, dict[str, str]] | None = None) -> None:
        self.pages, self.headers = pages, headers or {}
        self.statuses: dict[str, int] = {}
        self.hits: Counter[str] = Counter()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                server.hits[self.path] += 1
                content_type, body = server.pages.get(self.path, ("text/plain", b""))
                self.send_response(server.statuses.get(self.path, 200) if self.path in server.pages else 404)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in server.headers.get(self.path, {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
                return

        return Handler

    def __enter__(self) -> StaticServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
