"""Sources and jobs in the admin: add a shop by URL (a drafted profile with its preview, saved to
the profiles folder), upload a file with its column mapping, push URLs into a crawl, and the jobs
with their status, progress and start / stop / resume buttons; a local worker can be started here.

Every form posts with its CSRF token (checked by the middleware); every value from a shop or a
file is rendered by Jinja's autoescape. Jobs live in the product database (``jobs.store``), so a
restarted admin shows them as they are; the worker the admin starts is its own process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from scrapy.settings import BaseSettings
from sqladmin import BaseView, expose
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from recordhound import settings as defaults
from recordhound.admin.review import context
from recordhound.exceptions import RecordhoundError
from recordhound.jobs import create, drafts, states, store
from recordhound.jobs.config import WorkerConfig

ROUTE = "admin:view-source-jobs"
MAPPING_EXAMPLE = "external_id: sku\ntitle: title\nartists: {column: artists, split: [\" / \"]}\nprice: price\n"
_workers: list[subprocess.Popen[bytes]] = []  # workers this admin started (stopped by PID by whoever runs them)


def overrides(settings: BaseSettings) -> list[str]:
    """The admin's RECORDHOUND_* settings that differ from the defaults, as `-s NAME=VALUE`
    for the processes it starts (the worker must see the same database, queue and folders)."""
    found = []
    for name in sorted(k for k in settings if k.startswith("RECORDHOUND_")):
        value = settings[name]
        if value == getattr(defaults, name, None):
            continue
        text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        found += ["-s", f"{name}={text}"]
    return found


def start_worker(settings: BaseSettings) -> int:
    """`recordhound worker` as a process of its own session (it outlives a restart of the admin)."""
    log_dir = Path(".recordhound") / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "worker.log", "ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "recordhound", "worker", *overrides(settings)],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    _workers.append(process)
    return process.pid


def _running_workers() -> list[int]:
    return [p.pid for p in _workers if p.poll() is None]


async def _back(request: Request, message: str, error: bool = False, route: str = ROUTE, **params: Any) -> Response:
    url = request.url_for(route, **params).include_query_params(**{"error" if error else "done": message})
    return RedirectResponse(str(url), status_code=303)


def _job_rows(jobs: list[store.Job]) -> list[dict[str, Any]]:
    rows = []
    for job in jobs:
        doc = job.doc
        progress = doc.get("progress") or {}
        latency = (float(doc["first_page_at"]) - float(doc["started_at"])
                   if doc.get("first_page_at") and doc.get("started_at") else None)
        rows.append({"id": job.id, "name": job.name, "source": job.source, "type": doc.get("type", ""),
                     "status": job.status, "attempts": doc.get("attempts", 0), "last_error": doc.get("last_error") or "",
                     "done": progress.get("done") or 0, "total": progress.get("total"), "unit": progress.get("unit") or "",
                     "latency": latency, "schedule": doc.get("schedule") or {}, "worker": doc.get("worker") or "",
                     "can_stop": store.stoppable(doc), "can_start": job.status in states.STARTABLE})
    return rows


class SourceJobs(BaseView):
    name, icon = "Sources and jobs", "fa-solid fa-list-check"
    identity = "source-jobs"

    def _settings(self, request: Request) -> BaseSettings:
        found: BaseSettings = request.app.state.recordhound_settings
        return found

    def _config(self, request: Request) -> WorkerConfig:
        return WorkerConfig.from_settings(self._settings(request))

    @expose("/source-jobs", methods=["GET"], identity="source-jobs")
    async def jobs(self, request: Request) -> Response:
        found = await run_in_threadpool(store.all_jobs, context(request).engine)
        return await self.templates.TemplateResponse(request, "recordhound/source_jobs.html", {
            "jobs": _job_rows(found), "workers": _running_workers(), "mapping_example": MAPPING_EXAMPLE,
            "done": request.query_params.get("done"), "error": request.query_params.get("error")})

    @expose("/source-jobs/action", methods=["POST"], identity="source-jobs-action")
    async def action(self, request: Request) -> Response:
        form = await request.form()
        job_id, action = str(form.get("job_id", "")), str(form.get("action", ""))
        if not job_id.isdigit() or action not in ("start", "stop", "resume"):
            return await _back(request, "pick a job and start, stop or resume", error=True)
        try:
            job = await run_in_threadpool(store.request, context(request).engine, int(job_id), action)
        except RecordhoundError as exc:
            return await _back(request, str(exc), error=True)
        return await _back(request, f"{job.name} ({job.source}): {job.status}")

    @expose("/source-jobs/worker", methods=["POST"], identity="source-jobs-worker")
    async def worker(self, request: Request) -> Response:
        pid = await run_in_threadpool(start_worker, self._settings(request))
        return await _back(request, f"worker started (pid {pid})")

    @expose("/source-jobs/shop", methods=["POST"], identity="source-jobs-shop")
    async def shop(self, request: Request) -> Response:
        form = await request.form()
        url, name = str(form.get("url", "")).strip(), str(form.get("name", "")).strip()
        try:
            await run_in_threadpool(drafts.start, self._config(request).drafts_dir, url, name, [])
        except RecordhoundError as exc:
            return await _back(request, str(exc), error=True)
        return await _back(request, "drafting the profile", route="admin:view-source-jobs-draft", name=name)

    @expose("/source-jobs/draft/{name}", methods=["GET"], identity="source-jobs-draft")
    async def draft(self, request: Request) -> Response:
        found = await run_in_threadpool(drafts.state, self._config(request).drafts_dir, request.path_params["name"])
        return await self.templates.TemplateResponse(request, "recordhound/source_draft.html", {
            "draft": found, "done": request.query_params.get("done"), "error": request.query_params.get("error")})

    @expose("/source-jobs/draft/{name}/save", methods=["POST"], identity="source-jobs-draft-save")
    async def save(self, request: Request) -> Response:
        name, config = str(request.path_params["name"]), self._config(request)
        form = await request.form()
        try:
            every, follow = _every_hours(str(form.get("every_hours", ""))), form.get("follow") == "on"
            path = await run_in_threadpool(drafts.save, config.drafts_dir, name, config.profiles_dir)
            job = await run_in_threadpool(create.crawl_job, context(request).engine, self._settings(request), path,
                                          "", every, follow)
        except RecordhoundError as exc:
            return await _back(request, str(exc), error=True)
        return await _back(request, f"saved {path}; {job.name} queued")

    @expose("/source-jobs/file", methods=["POST"], identity="source-jobs-file")
    async def upload(self, request: Request) -> Response:
        form = await request.form()
        upload, name = form.get("file"), str(form.get("name", "")).strip()
        if not isinstance(upload, UploadFile) or not upload.filename:
            await form.close()
            return await _back(request, "choose a CSV, XLSX or JSON file", error=True)
        kind = Path(upload.filename).suffix.lower().lstrip(".").replace("jsonl", "json")
        data = await upload.read()
        await form.close()  # the spooled upload: closed here, not by the garbage collector
        try:
            mapping = yaml.safe_load(str(form.get("mapping", "")))
            if not isinstance(mapping, dict):
                raise RecordhoundError("the column mapping must be lines of `field: column`")
            every = _every_hours(str(form.get("every_hours", "")))
            job = await run_in_threadpool(self._file_job, request, name, kind, mapping, data, every)
        except (RecordhoundError, yaml.YAMLError) as exc:
            return await _back(request, str(exc).splitlines()[0], error=True)
        return await _back(request, f"{job.name} ({job.source}) queued")

    def _file_job(self, request: Request, name: str, kind: str, mapping: dict[str, Any], data: bytes,
                  every_hours: float | None) -> store.Job:
        config = self._config(request)
        profile = create.write_file_profile(config.profiles_dir, name, kind, mapping, {"$": "USD", "€": "EUR", "£": "GBP"})
        os.makedirs(config.uploads_dir, exist_ok=True)
        target = Path(config.uploads_dir) / f"{name}.{kind}"
        target.write_bytes(data)
        return create.import_job(context(request).engine, self._settings(request), str(profile), str(target),
                                 every_hours)

    @expose("/source-jobs/urls", methods=["POST"], identity="source-jobs-urls")
    async def urls(self, request: Request) -> Response:
        form = await request.form()
        source, priority = str(form.get("source", "")).strip(), str(form.get("priority", "0")).strip() or "0"
        given = [line.strip() for line in str(form.get("urls", "")).splitlines() if line.strip()]
        try:
            if not given or not priority.lstrip("-").isdigit():
                raise RecordhoundError("give one URL per line and a whole-number priority")
            added = await run_in_threadpool(_add_urls, self._settings(request), source, int(priority), given)
        except RecordhoundError as exc:
            return await _back(request, str(exc), error=True)
        return await _back(request, f"{added.crawl}: {added.queued} queued, {added.seen} already seen")


def _every_hours(value: str) -> float | None:
    """The schedule field: empty for one run, else hours between the end of a run and the next."""
    if not value.strip():
        return None
    try:
        hours = float(value)
    except ValueError:
        hours = 0.0
    if not hours > 0:
        raise RecordhoundError(f"every N hours: expected a number above 0, got {value!r}")
    return hours


def _add_urls(settings: BaseSettings, source: str, priority: int, urls: list[str]) -> Any:
    from recordhound.config import FrontierConfig
    from recordhound.frontier import outside
    from recordhound.sources import load_profile

    profile = load_profile(source, settings.getlist("RECORDHOUND_PROFILES_DIRS"))
    config = FrontierConfig.from_settings(settings)
    return outside.add(config, outside.crawl_name(config, profile),
                       outside.entries(profile, urls, priority, "product", settings))
