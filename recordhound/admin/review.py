"""The review tabs: Pending review, Price changes, Completed, Failed; and Crawl status.

Every button posts a form (with its CSRF token) that records a decision in the review queue,
checked first (a merge names an existing entity of the entry's type); the apply worker, which
runs inside the admin unless RECORDHOUND_ADMIN_APPLY is off, carries it out within seconds.
Nothing here writes product rows. After a decision the page comes back with its filter and page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from sqladmin import BaseView, expose
from sqlalchemy import Engine, func, select
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from recordhound.config import FrontierConfig
from recordhound.db.entities import ENTITIES
from recordhound.db.models import Source
from recordhound.exceptions import RecordhoundError
from recordhound.review import bulk
from recordhound.review.decisions import decide
from recordhound.review.docstore import Doc
from recordhound.review.queue import ENTITY_KINDS, Decision, ReviewError, ReviewQueue
from recordhound.review.records import shown_change

PAGE_SIZE = 50


@dataclass(frozen=True)
class AdminContext:
    engine: Engine
    queue: ReviewQueue
    frontier: FrontierConfig
    batch_size: int  # RECORDHOUND_REVIEW_BATCH_SIZE: bulk decisions per queue transaction


def context(request: Request) -> AdminContext:
    found: AdminContext = request.app.state.recordhound
    return found


def _page(items: list[Any], request: Request) -> tuple[list[Any], dict[str, Any]]:
    try:
        page = max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        page = 1
    pages = max(1, -(-len(items) // PAGE_SIZE))
    page = min(page, pages)
    return items[(page - 1) * PAGE_SIZE: page * PAGE_SIZE], {"page": page, "pages": pages, "total": len(items)}


async def _back(request: Request, route: str, message: str, error: bool = False) -> Response:
    """Back to the list the form was posted from, with its filter and page (the form's ``back``)."""
    form = await request.form()
    kept = [(k, v) for k, v in parse_qsl(str(form.get("back") or "")) if k not in ("done", "error")]
    url = str(request.url_for(route)) + "?" + urlencode([*kept, ("error" if error else "done", message)])
    return RedirectResponse(url, status_code=303)


async def _decide(request: Request, route: str, entry_ids: list[int], action: str,
                  into: int | None = None, fields: dict[str, str] | None = None) -> Response:
    ctx = context(request)
    done, problems = [], []
    for entry_id in entry_ids:
        try:
            await run_in_threadpool(decide, ctx.queue, ctx.engine, entry_id, action, into, fields)
            done.append(f"#{entry_id}")
        except RecordhoundError as exc:
            problems.append(str(exc))
    if problems:
        return await _back(request, route, "; ".join(problems), error=True)
    return await _back(request, route, f"{action}: {', '.join(done) or 'nothing'}")


def _ids(values: list[str]) -> list[int]:
    return [int(v) for v in values if str(v).isdigit()]


class PendingReview(BaseView):
    name, icon, category = "Pending review", "fa-solid fa-inbox", "Review"
    identity = "pending-review"

    @expose("/review", methods=["GET"], identity="pending-review")
    async def pending(self, request: Request) -> Response:
        ctx = context(request)
        kind = request.query_params.get("type") or None
        kind = kind if kind in ENTITY_KINDS else None
        source = request.query_params.get("source") or None
        search = (request.query_params.get("q") or "").strip().casefold()
        entries = await run_in_threadpool(ctx.queue.entries, kind, source)
        entries = [e for e in entries if e["kind"] != "price"
                   and (not search or search in e["name"].casefold()
                        or any(search in s.casefold() for s in e["spellings"]))]
        suggested = request.query_params.get("suggested") or ""
        if suggested in ("yes", "no"):  # names with a suggested merge, or with none
            entries = [e for e in entries if bool(e.get("suggestions")) == (suggested == "yes")]
        sort = "waiting" if request.query_params.get("sort") == "waiting" else "oldest"
        if sort == "waiting":  # the names most items wait on first
            entries.sort(key=lambda e: (-int(e["waiting"]), int(e["id"])))
        shown, paging = _page(entries, request)
        for entry in shown:
            entry["releases"] = await run_in_threadpool(_waiting_releases, ctx.queue, entry["id"])
        return await self.templates.TemplateResponse(request, "recordhound/pending.html", {
            "entries": shown, "paging": paging, "kind": kind or "", "q": request.query_params.get("q", ""),
            "kinds": ENTITY_KINDS, "source": source or "", "sources": await run_in_threadpool(_sources, ctx.engine),
            "sort": sort, "suggested": suggested, "done": request.query_params.get("done"), "error": request.query_params.get("error")})

    @expose("/review/decide", methods=["POST"], identity="review-decide")
    async def decide(self, request: Request) -> Response:
        form = await request.form()
        action = str(form.get("action", ""))
        into = str(form.get("into", "")).strip()
        fields = {"name": str(form.get("name", ""))} if action == "edit" else None
        if action == "merge" and not into.isdigit():
            return await _back(request, "admin:view-pending-review", "merge: pick an entity to merge into", error=True)
        return await _decide(request, "admin:view-pending-review", _ids(_texts(form.getlist("entry_id"))), action,
                             int(into) if into.isdigit() else None, fields)

    @expose("/review/bulk", methods=["POST"], identity="review-bulk")
    async def bulk(self, request: Request) -> Response:
        """The selected entries, in one queue transaction per batch: approve, skip, or merge each
        into its top suggestion (those without one stay, and are named)."""
        form = await request.form()
        ids = _ids(_texts(form.getlist("selected")))
        action = str(form.get("action", ""))
        if not ids:
            return await _back(request, "admin:view-pending-review", "select entries first", error=True)
        if action not in ("approve", "skip", "merge-top"):
            return await _back(request, "admin:view-pending-review", f"unknown bulk action {action!r}", error=True)
        ctx = context(request)
        try:
            decisions, left = await run_in_threadpool(bulk.by_ids, ctx.queue, ctx.engine, ids, action)
            done = await run_in_threadpool(bulk.record, ctx.queue, decisions, ctx.batch_size, None, True)
        except RecordhoundError as exc:
            return await _back(request, "admin:view-pending-review", str(exc), error=True)
        return await _back(request, "admin:view-pending-review", _bulk_message(action, done, left))

    @expose("/review/approve-unsuggested", methods=["POST"], identity="review-approve-unsuggested")
    async def approve_unsuggested(self, request: Request) -> Response:
        """Every pending name of one source (of the type shown) that has no suggested merge."""
        form = await request.form()
        source, kind = str(form.get("source") or ""), str(form.get("type") or "") or None
        if not source:
            return await _back(request, "admin:view-pending-review", "pick a source first", error=True)
        ctx = context(request)
        selection = bulk.Selection(every=True, source=source, kind=kind, no_suggestion=True)
        try:
            decisions, _ = await run_in_threadpool(bulk.plan, ctx.queue, ctx.engine, selection, "approve")
            done = await run_in_threadpool(bulk.record, ctx.queue, decisions, ctx.batch_size, None, True)
        except RecordhoundError as exc:
            return await _back(request, "admin:view-pending-review", str(exc), error=True)
        return await _back(request, "admin:view-pending-review",
                           f"approve: {len(done[0])} names of {source} with no suggestion")

    @expose("/review/{entry_id:int}/edit", methods=["GET"], identity="review-edit")
    async def edit(self, request: Request) -> Response:
        entry = await run_in_threadpool(context(request).queue.entry, request.path_params["entry_id"])
        return await self.templates.TemplateResponse(request, "recordhound/edit.html", {"entry": entry})

    @expose("/review/{entry_id:int}/merge", methods=["GET"], identity="review-merge")
    async def merge(self, request: Request) -> Response:
        """Search the catalog for the entity to merge a pending name into."""
        ctx = context(request)
        entry = await run_in_threadpool(ctx.queue.entry, request.path_params["entry_id"])
        query = (request.query_params.get("q") or entry["name"]).strip()
        found = await run_in_threadpool(_search_entities, ctx.engine, entry["kind"], query)
        return await self.templates.TemplateResponse(request, "recordhound/merge.html", {
            "entry": entry, "q": query, "found": found})


WAITING_SHOWN = 3


def _bulk_message(action: str, done: tuple[list[Doc], list[int]], left: list[Doc]) -> str:
    jobs, passed = done
    verb = "merge into the top suggestion" if action == "merge-top" else action
    message = f"{verb}: {len(jobs)} decided"
    if passed:
        message += f"; already decided: {', '.join(f'#{i}' for i in passed)}"
    if left:
        ids = ", ".join(f"#{entry['id']}" for entry in left)
        message += f"; no suggestion, left as they are: {ids}"
    return message


def _sources(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return [str(name) for name in conn.execute(select(Source.name).order_by(Source.name)).scalars()]


def _waiting_releases(queue: ReviewQueue, entry_id: int) -> list[dict[str, str]]:
    """The first releases an entry holds back: title and the page (or file line) it came from."""
    found = []
    for parked in queue.parked_items(entry_id)[:WAITING_SHOWN]:
        item = parked.get("item") or {}
        url = str(item.get("url") or "")
        found.append({"title": str(item.get("title") or "(untitled)"), "source": str(parked.get("source_name") or ""),
                      "url": url if url.startswith(("http://", "https://")) else "",
                      "where": str(parked.get("ref") or "")})
    return found


def _search_entities(engine: Engine, kind: str, query: str) -> list[dict[str, Any]]:
    entity = ENTITIES[kind].entity
    pattern = f"%{query.replace('%', '').replace('_', '')}%"
    with engine.connect() as conn:
        rows = conn.execute(select(entity.id, entity.name).where(func.lower(entity.name).like(pattern.lower()))
                            .order_by(entity.name).limit(50)).all()
    return [{"id": r.id, "name": r.name} for r in rows]


class PriceChanges(BaseView):
    name, icon, category = "Price changes", "fa-solid fa-money-bill-trend-up", "Review"
    identity = "price-changes"

    @expose("/prices", methods=["GET"], identity="price-changes")
    async def prices(self, request: Request) -> Response:
        entries = await run_in_threadpool(context(request).queue.entries, "price")
        shown, paging = _page(entries, request)
        return await self.templates.TemplateResponse(request, "recordhound/prices.html", {
            "entries": shown, "paging": paging, "done": request.query_params.get("done"),
            "error": request.query_params.get("error")})

    @expose("/prices/decide", methods=["POST"], identity="prices-decide")
    async def decide(self, request: Request) -> Response:
        """One row's decision, or the selected rows' (one queue transaction per batch), each with the
        revision of the change the page showed: a change a crawl rewrote since is refused (one row) or
        passed over (selected rows), and the page comes back showing it as it is now."""
        form = await request.form()
        action = str(form.get("action", ""))
        single = _ids(_texts(form.getlist("entry_id")))
        ids = single or _ids(_texts(form.getlist("selected")))
        route = "admin:view-price-changes"
        if not ids:
            return await _back(request, route, "select price changes first", error=True)
        ctx = context(request)
        try:
            decisions = [Decision(i, {"approve": "approve", "reject": "skip"}.get(action, action),
                                  revision=_viewed(form, i, bool(single))) for i in ids]
            done = await run_in_threadpool(bulk.record, ctx.queue, decisions, ctx.batch_size, None, len(ids) > 1)
            message = await run_in_threadpool(_prices_message, ctx.queue, action, done)
        except RecordhoundError as exc:
            return await _back(request, route, str(exc), error=True)
        return await _back(request, route, message)


def _viewed(form: FormData, entry_id: int, single: bool) -> int | None:
    """The revision of the change the page showed for this entry (a row's ``revision``, the selection's
    ``revision_ID``); None from a form that sent none: the current change is decided, and named."""
    value = form.get("revision" if single else f"revision_{entry_id}")
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.isdigit():
        raise ReviewError(f"price change {entry_id}: the form sent no valid revision; view it again")
    return int(value)


def _prices_message(queue: ReviewQueue, action: str, done: tuple[list[Doc], list[int]]) -> str:
    """What was decided (each with the change it was decided on) and what was passed over, and why."""
    jobs, passed = done
    message = f"{action}: " + (", ".join(f"#{j['entry_id']} ({shown_change(j['change'])})" for j in jobs)
                               or "nothing")
    now = queue.entries_by_id(passed) if passed else {}
    changed = [i for i in passed if i in now and now[i]["status"] in ("pending", "failed")]
    decided = [i for i in passed if i not in changed]
    if decided:
        message += f"; already decided: {', '.join(f'#{i}' for i in decided)}"
    if changed:
        message += "; changed since you viewed them, not decided: " + ", ".join(
            f"#{i} (now {shown_change(now[i])})" for i in changed)
    return message


class _Jobs(BaseView):
    state = ""
    category = "Review"

    async def _list(self, request: Request) -> Response:
        jobs = await run_in_threadpool(context(request).queue.jobs, self.state)
        jobs.reverse()  # newest first
        shown, paging = _page(jobs, request)
        return await self.templates.TemplateResponse(request, "recordhound/jobs.html", {
            "jobs": shown, "paging": paging, "state": self.state, "done": request.query_params.get("done"),
            "error": request.query_params.get("error")})


class CompletedJobs(_Jobs):
    name, icon, state = "Completed", "fa-solid fa-check", "completed"
    identity = "completed-jobs"

    @expose("/jobs/completed", methods=["GET"], identity="completed-jobs")
    async def completed(self, request: Request) -> Response:
        return await self._list(request)


class FailedJobs(_Jobs):
    name, icon, state = "Failed", "fa-solid fa-triangle-exclamation", "failed"
    identity = "failed-jobs"

    @expose("/jobs/failed", methods=["GET"], identity="failed-jobs")
    async def failed(self, request: Request) -> Response:
        return await self._list(request)

    @expose("/jobs/retry", methods=["POST"], identity="jobs-retry")
    async def retry(self, request: Request) -> Response:
        form = await request.form()
        queue = context(request).queue
        retried, problems = [], []
        for job_id in _ids(_texts(form.getlist("job_id"))):
            try:
                await run_in_threadpool(queue.retry, job_id)
                retried.append(str(job_id))
            except RecordhoundError as exc:
                problems.append(str(exc))
        if problems:
            return await _back(request, "admin:view-failed-jobs", "; ".join(problems), error=True)
        return await _back(request, "admin:view-failed-jobs", f"retrying job(s) {', '.join(retried)}")


class CrawlStatus(BaseView):
    name, icon = "Crawl status", "fa-solid fa-gauge"
    identity = "crawl-status"

    @expose("/status", methods=["GET"], identity="crawl-status")
    async def status(self, request: Request) -> Response:
        report = await run_in_threadpool(crawl_status, context(request))
        return await self.templates.TemplateResponse(request, "recordhound/status.html", report)


def crawl_status(ctx: AdminContext) -> dict[str, Any]:
    """Per source: frontier counts, storing rate, review backlog; refreshed by the page."""
    from recordhound.frontier.status import known_crawls, status

    with ctx.engine.connect() as conn:
        sources = [{"id": s.id, "name": s.name, "kind": s.kind, "meta": s.meta or {}}
                   for s in conn.execute(select(Source.id, Source.name, Source.kind, Source.meta.label("meta"))
                                              .order_by(Source.id))]
    frontier_error = None
    try:
        crawls = {name: status(ctx.frontier, name) for name in known_crawls(ctx.frontier)}
    except Exception as exc:  # noqa: BLE001 - an unreachable frontier is shown, not fatal
        crawls, frontier_error = {}, f"{type(exc).__name__}: {exc}"
    entries = ctx.queue.entries()
    backlog: dict[str, int] = {}
    for entry in entries:
        for name in {s["source_name"] for s in entry.get("sources", ())}:
            backlog[name] = backlog.get(name, 0) + 1
    for source in sources:
        source["frontier"] = crawls.pop(source["name"], None)
        source["backlog"] = backlog.get(source["name"], 0)
        source["progress"] = source["meta"].get("progress") or {}
    return {"sources": sources, "other_crawls": crawls, "queue": ctx.queue.counts(),
            "frontier_backend": ctx.frontier.backend, "frontier_error": frontier_error}


REVIEW_VIEWS = (PendingReview, PriceChanges, CompletedJobs, FailedJobs, CrawlStatus)


def _texts(values: list[Any]) -> list[str]:
    """Form values that are text (an uploaded file where an id belongs is ignored)."""
    return [value for value in values if isinstance(value, str)]
