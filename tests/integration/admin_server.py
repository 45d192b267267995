"""The web admin as a real HTTP server (uvicorn on port 0, in a thread) over a test's DB and queue."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
import uvicorn
from scrapy.settings import Settings

from recordhound import settings as defaults
from recordhound.admin.app import build_app
from recordhound.admin.users import create_user
from tests.integration.review_env import ReviewEnv

USER, PASSWORD = "reviewer", "correct horse battery"


@contextmanager
def admin_server(env: ReviewEnv, tmp_path: Path, apply: bool = False, **extra: object) -> Iterator[str]:
    """``apply``: the admin runs its apply worker (as it does by default); off, a test runs
    ``env.worker()`` itself and counts what it applied."""
    settings = Settings()
    settings.setmodule(defaults)
    for pair in env.settings():
        settings.set(*pair.split("=", 1))
    settings.set("RECORDHOUND_DATABASE_URL", env.database_url)
    settings.set("RECORDHOUND_ADMIN_SECRET_PATH", str(tmp_path / "admin-secret"))
    settings.set("RECORDHOUND_FRONTIER_DIR", str(tmp_path / "frontier"))
    settings.set("RECORDHOUND_ADMIN_APPLY", apply)
    settings.set("RECORDHOUND_APPLY_POLL_SECONDS", 0.2)
    for name, value in extra.items():
        settings.set(name, value)
    create_user(env.engine, USER, PASSWORD)
    server = uvicorn.Server(uvicorn.Config(build_app(settings), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="admin-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the admin server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def token(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page has no CSRF token"
    return found.group(1)


def logged_in(base: str) -> tuple[requests.Session, str]:
    """A session logged in through the login form; returns it and its CSRF token."""
    session = requests.Session()
    login = session.get(f"{base}/admin/login")
    done = session.post(f"{base}/admin/login", data={
        "username": USER, "password": PASSWORD, "csrf_token": token(login.text)})
    assert done.status_code == 200 and done.url.rstrip("/").endswith("/admin"), done.text[:500]
    return session, token(session.get(f"{base}/admin/review").text)
