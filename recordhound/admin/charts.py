"""The charts' JSON endpoints (behind the admin's login); the pages draw them with uPlot.

``/admin/charts/offer/ID.json``     an offer's price history
``/admin/charts/release/ID.json``   every offer of a release (all shops, all formats)
``/admin/charts/crawl-rate.json``   items stored and pages fetched per minute (``?source=ID``: one source)
``/admin/charts/backlog.json``      review entries waiting for a decision over time
"""

from __future__ import annotations

from typing import Any

from sqladmin import BaseView, expose
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from recordhound.admin import chart_data
from recordhound.admin.review import context


def _json(data: dict[str, Any]) -> Response:
    return JSONResponse(data, headers={"cache-control": "no-store"})


class ChartData(BaseView):
    name, icon = "Charts", "fa-solid fa-chart-line"
    identity = "chart-data"

    def is_visible(self, request: Request) -> bool:
        return False  # data only: the charts are on the landing and detail pages

    @expose("/charts/offer/{offer_id:int}.json", methods=["GET"], identity="chart-offer")
    async def offer(self, request: Request) -> Response:
        engine = context(request).engine
        return _json(await run_in_threadpool(chart_data.price_chart, engine, [request.path_params["offer_id"]]))

    @expose("/charts/release/{release_id:int}.json", methods=["GET"], identity="chart-release")
    async def release(self, request: Request) -> Response:
        engine = context(request).engine
        offers = await run_in_threadpool(chart_data.release_offer_ids, engine, request.path_params["release_id"])
        return _json(await run_in_threadpool(chart_data.price_chart, engine, offers))

    @expose("/charts/crawl-rate.json", methods=["GET"], identity="chart-crawl-rate")
    async def crawl_rate(self, request: Request) -> Response:
        source = request.query_params.get("source", "")
        source_id = int(source) if source.isdigit() else None
        return _json(await run_in_threadpool(chart_data.crawl_rate_chart, context(request).engine, source_id))

    @expose("/charts/backlog.json", methods=["GET"], identity="chart-backlog")
    async def backlog(self, request: Request) -> Response:
        return _json(await run_in_threadpool(chart_data.backlog_chart, context(request).queue))
