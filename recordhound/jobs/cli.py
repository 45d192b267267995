"""`recordhound frontier add`, `recordhound worker` and `recordhound job ...`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from recordhound.cli_settings import current_settings, setting_option

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from recordhound.jobs.store import Job


@click.command("add")
@click.option("--source", required=True, help="the crawl's source (profile name or file)")
@click.option("--priority", default=0, show_default=True, type=int, help="higher is fetched sooner")
@click.option("--kind", default="product", show_default=True, type=click.Choice(["product", "listing"]),
              help="the page kind: which spider callback reads it")
@click.argument("urls", nargs=-1)
def frontier_add(source: str, priority: int, kind: str, urls: tuple[str, ...]) -> None:
    """Queue URLs (or one per line on stdin) in SOURCE's crawl through its seen-set; a running node
    (or the next one) fetches those it has not seen."""
    from recordhound.config import FrontierConfig
    from recordhound.frontier import outside
    from recordhound.sources import load_profile

    settings = current_settings()
    profile = load_profile(source, settings.getlist("RECORDHOUND_PROFILES_DIRS"))
    given = list(urls) or [line.strip() for line in sys.stdin if line.strip()]
    if not given:
        raise click.UsageError("no URL given (as arguments, or one per line on stdin)")
    config = FrontierConfig.from_settings(settings)
    found = outside.entries(profile, given, priority, kind, settings)
    added = outside.add(config, outside.crawl_name(config, profile), found)
    click.echo(f"{added.crawl}: {added.queued} queued, {added.seen} already seen ({config.backend} frontier)")


def _engine() -> Engine:
    from recordhound.config import StoreConfig
    from recordhound.jobs.worker import open_once

    return open_once(StoreConfig.from_settings(current_settings()).database_url)


def describe(job: Job) -> str:
    doc = job.doc
    progress = doc.get("progress") or {}
    done, total = progress.get("done") or 0, progress.get("total")
    line = (f"{job.id} {job.source} [{doc.get('type')}] {job.status}: {done}"
            f"{f' of {total}' if total else ''} {progress.get('unit') or ''}, attempt {doc.get('attempts', 0)}")
    if doc.get("first_page_at") and doc.get("started_at"):
        line += f", first page after {float(doc['first_page_at']) - float(doc['started_at']):.1f} s"
    if doc.get("last_error"):
        line += f"; last error: {doc['last_error']}"
    return line


@click.group("job")
@setting_option
def job_group() -> None:
    """Jobs that parse a source (crawl a shop, import a file), run by `recordhound worker`."""


@job_group.command("crawl")
@click.argument("source")
@click.option("--base-url", default="", help="another copy of the shop (as `-a base_url=`)")
@click.option("--every-hours", default=None, type=click.FloatRange(min=0, min_open=True),
              help="run again this long after each run ends")
@click.option("--follow", is_flag=True, help="keep following (the profile's recrawl schedule, outside URLs)")
def job_crawl(source: str, base_url: str, every_hours: float | None, follow: bool) -> None:
    """Queue a job that crawls SOURCE (a profile name or file)."""
    from recordhound.jobs.create import crawl_job

    click.echo(describe(crawl_job(_engine(), current_settings(), source, base_url, every_hours, follow)))


@job_group.command("import")
@click.argument("source")
@click.option("--file", "path", default="", type=click.Path(dir_okay=False, exists=True),
              help="the file (default: the profile's location)")
@click.option("--every-hours", default=None, type=click.FloatRange(min=0, min_open=True))
def job_import(source: str, path: str, every_hours: float | None) -> None:
    """Queue a job that imports SOURCE's file (CSV, XLSX, JSON), resuming an unfinished one."""
    from recordhound.jobs.create import import_job

    click.echo(describe(import_job(_engine(), current_settings(), source, path, every_hours)))


@job_group.command("list")
@click.option("--json", "as_json", is_flag=True)
def job_list(as_json: bool) -> None:
    """Every job with its status, progress, attempts and last error."""
    import json

    from recordhound.jobs.store import all_jobs

    found = all_jobs(_engine())
    if as_json:
        click.echo(json.dumps([{"id": j.id, "source": j.source, **j.doc} for j in found], indent=1, default=str))
        return
    for job in found:
        click.echo(describe(job))


def _request(action: str) -> click.Command:
    @click.argument("job_id", type=int)
    def command(job_id: int) -> None:
        from recordhound.jobs.store import request

        click.echo(describe(request(_engine(), job_id, action)))

    command.__doc__ = {"start": "Run a finished, stopped or failed job again from the beginning.",
                       "stop": "Stop a job (a running one stops at its next batch or page; resumable).",
                       "resume": "Continue a stopped or failed job where it stopped."}[action]
    return job_group.command(action)(command)


for _action in ("start", "stop", "resume"):
    _request(_action)


@click.command("worker")
@click.option("--once", is_flag=True, help="exit when no job is waiting")
def worker_command(once: bool) -> None:
    """Run jobs one at a time until SIGTERM (several workers may share the jobs)."""
    import logging
    import signal

    from recordhound.cli_settings import META_KEY
    from recordhound.config import StoreConfig
    from recordhound.jobs.config import WorkerConfig
    from recordhound.jobs.worker import Worker, open_job_store, stop_on_signals

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ctx = click.get_current_context()
    settings = current_settings()
    config = WorkerConfig.from_settings(settings)
    stop_on_signals(signal.default_int_handler)  # a stop while the job store is down at the start: as below
    worker: Worker | None = None
    try:
        engine = open_job_store(StoreConfig.from_settings(settings).database_url)
        worker = Worker(engine, settings, config, list(ctx.find_root().meta.get(META_KEY, ())))
        ran = worker.run(once)  # (its own handler from here on)
    except KeyboardInterrupt:
        ran = worker.ran if worker else 0
    click.echo(f"worker {worker.id if worker else '(stopped before it started)'}: {ran} jobs run", err=True)


def register(main: click.Group) -> None:
    frontier = main.commands["frontier"]
    assert isinstance(frontier, click.Group)
    frontier.add_command(setting_option(frontier_add))
    main.add_command(job_group)
    main.add_command(setting_option(worker_command))
