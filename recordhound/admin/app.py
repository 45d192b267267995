"""Build the admin application: sqladmin over the product models, plus the review views."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

import logging
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

from sqladmin import Admin
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route

from recordhound.admin.auth import AdminAuth
from recordhound.admin.catalog import CATALOG_VIEWS
from recordhound.admin.csrf import csrf_token
from recordhound.admin.review import REVIEW_VIEWS, AdminContext
from recordhound.config import FrontierConfig, ReviewConfig, StoreConfig
from recordhound.db.migrate import open_database
from recordhound.review.factory import open_queue

logger = logging.getLogger(__name__)
TEMPLATES = str(Path(__file__).parent / "templates")


def secret_key(configured: str, path: str) -> str:
    """The session-signing key: the setting, else one generated once and kept in ``path`` (0600)."""
    if configured:
        return configured
    if os.path.exists(path):
        return Path(path).read_text().strip()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    key = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(key)
    return key


def _timestamp(value: float) -> str:
    return datetime.fromtimestamp(float(value), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def build_app(settings: BaseSettings) -> Starlette:
    store, review = StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings)
    engine = open_database(store.database_url)
    app = Starlette(routes=[Route("/", lambda request: RedirectResponse("/admin/"))])
    key = secret_key(str(settings.get("RECORDHOUND_ADMIN_SECRET_KEY") or ""),
                     str(settings.get("RECORDHOUND_ADMIN_SECRET_PATH")))
    auth = AdminAuth(engine, key, https_only=settings.getbool("RECORDHOUND_ADMIN_HTTPS_ONLY"))
    admin = Admin(app, engine, title="recordhound", authentication_backend=auth, templates_dir=TEMPLATES)
    for view in CATALOG_VIEWS:
        admin.add_view(view)
    for base_view in REVIEW_VIEWS:
        menu_identity = base_view.identity
        admin.add_base_view(base_view)
        base_view.identity = menu_identity  # sqladmin leaves the last exposed route's identity here
    admin.templates.env.globals["csrf_token"] = csrf_token
    admin.templates.env.filters["timestamp"] = _timestamp
    admin.admin.state.recordhound = AdminContext(engine, open_queue(review), FrontierConfig.from_settings(settings))
    logger.info("Admin over %s, %s review queue", engine.url.render_as_string(), review.backend)
    return app
