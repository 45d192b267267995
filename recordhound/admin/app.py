"""Build the admin application: sqladmin over the product models, plus the review views."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from sqlalchemy import Engine

    from recordhound.catalog.apply import ApplyWorker

import logging
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqladmin import Admin
from sqladmin.authentication import login_required
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from recordhound.admin.auth import AdminAuth
from recordhound.admin.alerts import Alerts
from recordhound.admin.catalog import CATALOG_VIEWS
from recordhound.admin.charts import ChartData
from recordhound.admin.csrf import csrf_token
from recordhound.admin.review import REVIEW_VIEWS, AdminContext, context, crawl_status
from recordhound.admin.security import SecurityHeaders
from recordhound.admin.source_jobs import SourceJobs
from recordhound.config import FrontierConfig, ReviewConfig, StoreConfig
from recordhound.db.migrate import open_database
from recordhound.db.samples import readable_error
from recordhound.metrics import registry
from recordhound.review.factory import open_queue

logger = logging.getLogger(__name__)
TEMPLATES = str(Path(__file__).parent / "templates")
STATIC = str(Path(__file__).parent / "static")  # charts.js and vendor/ (uPlot): served by the admin, no CDN
REFUSED_WAIT_SECONDS = 60.0  # the admin's apply worker, refused by a store for good: tried again after this


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


class RecordhoundAdmin(Admin):
    @login_required
    async def index(self, request: Request) -> Response:
        """The landing page: the review backlog and the crawls."""
        report = await run_in_threadpool(crawl_status, context(request))
        return await self.templates.TemplateResponse(request, "recordhound/home.html", report)


@asynccontextmanager
async def _serving(settings: BaseSettings, engine: Engine) -> AsyncIterator[None]:
    """The admin's life: its apply worker beside it; at its end the product DB's connections close (an
    admin stopped in a process that goes on, a test's, left them to the garbage collector)."""
    try:
        async with _apply_worker(settings):
            yield
    finally:
        engine.dispose()


@asynccontextmanager
async def _apply_worker(settings: BaseSettings) -> AsyncIterator[None]:
    """The apply worker runs beside the admin (RECORDHOUND_ADMIN_APPLY): a decision reaches the
    catalog within a poll interval, with nothing else to start."""
    if not settings.getbool("RECORDHOUND_ADMIN_APPLY"):
        yield
        return
    from recordhound.catalog.apply import open_worker

    stop = threading.Event()
    worker = open_worker(settings)
    thread = threading.Thread(target=apply_until_stopped, args=(worker, stop.is_set),
                              name="apply-worker", daemon=True)
    thread.start()
    logger.info("Apply worker running in the admin (RECORDHOUND_ADMIN_APPLY)")
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


def apply_until_stopped(worker: ApplyWorker, stop: Callable[[], bool],
                        refused_wait_seconds: float = REFUSED_WAIT_SECONDS) -> None:
    """The admin's apply worker, until the admin stops. A store that refuses it (a read-only database, a
    queue key of the wrong type: ``RefusalError``), or any other error that ends it (an outage does not: the
    worker waits it out), is said in one line and the worker is started again after a while: an
    operator may mend the store without restarting the admin; meanwhile the decisions wait, approved."""
    from recordhound.exceptions import reason

    while not stop():
        try:
            worker.run(follow=True, stop=stop)
            return
        except Exception as exc:  # noqa: BLE001 - said; the admin goes on serving, the worker starts again
            logger.error("The apply worker stopped: %s (started again in %.0f s)", reason(exc), refused_wait_seconds)
            deadline = time.monotonic() + refused_wait_seconds
            while time.monotonic() < deadline and not stop():
                time.sleep(0.1)


def build_app(settings: BaseSettings) -> Starlette:
    store, review = StoreConfig.from_settings(settings), ReviewConfig.from_settings(settings)
    engine = open_database(store.database_url)
    hosts = settings.getlist("RECORDHOUND_ADMIN_ALLOWED_HOSTS")
    script = (Path(__file__).parent / "static" / "recordhound.js").read_bytes()
    keys = (Path(__file__).parent / "static" / "review-keys.js").read_bytes()  # the review list's shortcuts
    state = AdminContext(engine, open_queue(review), FrontierConfig.from_settings(settings), review.batch_size)
    metrics = registry(state.frontier, state.engine, state.queue)

    async def serve_metrics(request: Request) -> Response:
        """Prometheus text format, read from the shared state on each scrape (no login: counts only)."""
        body = await run_in_threadpool(generate_latest, metrics)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    app = Starlette(routes=[Route("/", lambda request: RedirectResponse("/admin/")),
                            Route("/recordhound.js", lambda request: Response(script, media_type="text/javascript"),
                                  name="recordhound-js"),
                            Route("/review-keys.js", lambda request: Response(keys, media_type="text/javascript"),
                                  name="review-keys-js"),
                            Route("/metrics", serve_metrics, name="metrics"),
                            Mount("/static", StaticFiles(directory=STATIC), name="recordhound-static")],
                    middleware=[Middleware(SecurityHeaders), Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
                    lifespan=lambda _: _serving(settings, engine))
    key = secret_key(str(settings.get("RECORDHOUND_ADMIN_SECRET_KEY") or ""),
                     str(settings.get("RECORDHOUND_ADMIN_SECRET_PATH")))
    auth = AdminAuth(engine, key, https_only=settings.getbool("RECORDHOUND_ADMIN_HTTPS_ONLY"))
    admin = RecordhoundAdmin(app, engine, title="recordhound", authentication_backend=auth,
                             templates_dir=TEMPLATES)
    admin.admin.router.routes.insert(0, Route("/logout", auth.logout_post, methods=["POST"], name="logout-post"))
    for view in CATALOG_VIEWS:
        admin.add_view(view)
    admin.add_base_view(SourceJobs)
    SourceJobs.identity = "source-jobs"  # as for the review views: sqladmin leaves the last route's here
    for base_view in (*REVIEW_VIEWS, Alerts, ChartData):
        menu_identity = base_view.identity
        admin.add_base_view(base_view)
        base_view.identity = menu_identity  # sqladmin leaves the last exposed route's identity here
    admin.templates.env.globals["csrf_token"] = csrf_token
    admin.templates.env.filters["readable_error"] = readable_error
    admin.templates.env.filters["timestamp"] = _timestamp
    admin.admin.state.recordhound = state
    admin.admin.state.recordhound_settings = settings  # the source-jobs views start processes with them
    logger.info("Admin over %s, %s review queue", engine.url.render_as_string(), review.backend)
    return app
