"""The `recordhound` command: the demo shop and the one-command demo crawl, the database schema, scrapyd
(schedule, jobs, cancel), `apply`; each package's own group is registered from its `cli.py`."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

import click

from recordhound.children import sigint_ignored
from recordhound.cli_settings import current_settings, name_value_pairs, setting_option
from recordhound.exceptions import RecordhoundError

if TYPE_CHECKING:
    from recordhound.demo.catalog import Catalog
    from recordhound.scrapyd_client import ScrapydClient
    from recordhound.catalog.apply import Progress


_debug = {"traceback": False}


class Commands(click.Group):
    """recordhound's commands: a product database or Redis a command could not reach (or lost) is one
    :class:`RecordhoundError` (``preflight.unreachable``), said by ``run`` in one line, not the driver's
    traceback. Caught here, where the command line's ``-s`` settings are still known."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            from recordhound.preflight import unreachable

            try:
                said = unreachable(exc, current_settings)
            except Exception:  # noqa: BLE001 - the settings cannot be read now: the command's own error stands
                said = None
            if said is None:
                raise
            raise said from exc


@click.group(cls=Commands)
@click.option("--debug", is_flag=True, help="on an error, show the traceback too")
def main(debug: bool) -> None:
    """recordhound: crash-safe catalog crawls into a reviewed product database."""
    _debug["traceback"] = debug


@main.command("demo-shop")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8070, show_default=True, help="0 picks a free port")
@click.option("--releases", default=500, show_default=True, type=click.IntRange(20))
@click.option("--seed", default=1, show_default=True)
@click.option("--epoch", default=0, show_default=True, type=click.IntRange(0), help="price epoch")
@click.option("--export", "export_dir", default=None, help="write CSV/XLSX/JSON feeds here and exit")
@click.option("--rate", default=0.0, type=click.FloatRange(0), help="throttled: 429 above this many requests a second")
@click.option("--latency", default=0.0, type=click.FloatRange(0), help="throttled: seconds each answer takes")
@click.option("--unavailable-every", default=0, type=click.IntRange(0),
              help="throttled: every N-th product page answers 503 at first")
@click.option("--unavailable-times", default=2, show_default=True, type=click.IntRange(1),
              help="...to its first this many requests")
@click.option("--epoch-seconds", default=0.0, type=click.FloatRange(0),
              help="the price epoch advances this often (0: never)")
@click.option("--last-epoch", default=1_000_000, type=click.IntRange(0), help="...up to this epoch")
@click.option("--offsite-links", is_flag=True, help="each listing page also links to another site")
@click.option("--crawl-delay", default=0.0, type=click.FloatRange(0), help="robots.txt's Crawl-delay (0: none)")
@click.option("--woo-store-api", default="open", show_default=True, type=click.Choice(["open", "closed"]),
              help="the WooCommerce-like section's Store API (closed: it answers 401)")
def demo_shop(host: str, port: int, releases: int, seed: int, epoch: int, export_dir: str | None,
              rate: float, latency: float, unavailable_every: int, unavailable_times: int,
              epoch_seconds: float, last_epoch: int, offsite_links: bool, crawl_delay: float,
              woo_store_api: str) -> None:
    """Serve the deterministic demo record shop (prints its base URL)."""
    from recordhound.demo.catalog import Catalog
    from recordhound.demo.process import READY_PREFIX
    from recordhound.demo.server import DemoShop, Epochs, Throttle, serve

    catalog = Catalog(releases, seed=seed, epoch=epoch)
    if export_dir:
        _export(catalog, export_dir)
        return
    shop = DemoShop(catalog, Throttle(rate, latency, unavailable_every, unavailable_times, crawl_delay=crawl_delay),
                    Epochs(epoch_seconds, max(last_epoch, epoch)), offsite_links, woo_store_api=woo_store_api == "open")

    def ready(url: str) -> None:
        click.echo(f"{READY_PREFIX} {len(catalog.products)} products ({releases} releases, "
                   f"seed {seed}, epoch {epoch}) at {url}")
        sys.stdout.flush()

    try:
        asyncio.run(serve(shop, host, port, ready))
    except KeyboardInterrupt:
        pass


def _export(catalog: Catalog, folder: str) -> None:
    from recordhound.demo import feeds

    os.makedirs(folder, exist_ok=True)
    for path, (_, render) in feeds.FEEDS.items():
        target = os.path.join(folder, os.path.basename(path))
        with open(target, "wb") as out:
            out.write(render(catalog))
        click.echo(target)


@main.group()
def db() -> None:
    """The product database."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Create or migrate the product schema ($DATABASE_URL, else the SQLite file)."""
    from recordhound.config import database_url, project_settings
    from recordhound.db.engine import make_engine
    from recordhound.db.migrate import current_revision, upgrade

    engine = make_engine(database_url(project_settings()))
    upgrade(engine, revision)
    click.echo(f"{engine.url.render_as_string()}: schema at revision {current_revision(engine)}")


def _setting(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list[tuple[str, str]]:
    """NAME=VALUE pairs of an option passed on to scrapyd (`schedule --setting/--arg`)."""
    return name_value_pairs(values)


def _scrapyd(target: str) -> ScrapydClient:
    from recordhound.scrapyd_client import ScrapydClient, Target

    return ScrapydClient(Target.from_config(target))


@main.command("schedule")
@click.argument("source")
@click.option("--target", default="local", show_default=True, help="a [deploy:NAME] of scrapy.cfg")
@click.option("--nodes", default=1, show_default=True, type=click.IntRange(1, 64),
              help="crawler processes sharing this crawl (use with REDIS_URL on the scrapyd side)")
@click.option("--setting", "settings", multiple=True, callback=_setting, metavar="NAME=VALUE")
@click.option("--arg", "args", multiple=True, callback=_setting, metavar="NAME=VALUE",
              help="a spider argument, as with scrapy -a (e.g. base_url=...)")
def schedule(source: str, target: str, nodes: int, settings: list[tuple[str, str]],
             args: list[tuple[str, str]]) -> None:
    """Schedule `scrapy crawl catalog -a source=SOURCE` on scrapyd, NODES times."""
    import uuid

    from recordhound.scrapyd_client import ScrapydError
    from recordhound.sources import load_profile

    client = _scrapyd(target)
    client.check_deployed("catalog")
    try:  # the egg carries this checkout's profiles: a source it does not have would die in scrapyd
        load_profile(source, current_settings().getlist("RECORDHOUND_PROFILES_DIRS"))
    except RecordhoundError as exc:
        raise ScrapydError(f"not scheduled: {exc}") from exc
    crawl = uuid.uuid4().hex[:8]
    jobs = client.schedule("catalog", nodes, dict(settings), {**dict(args), "source": source},
                           job_ids=[f"{source}--{crawl}-{n}" for n in range(1, nodes + 1)])
    for job in jobs:
        click.echo(job)


@main.command("jobs")
@click.option("--target", default="local", show_default=True)
@click.option("--json", "as_json", is_flag=True)
def jobs(target: str, as_json: bool) -> None:
    """Pending, running and finished jobs on scrapyd, with their source and times."""
    import json

    from recordhound.scrapyd_client import job_source

    client = _scrapyd(target)
    listed = client.jobs()
    if as_json:
        click.echo(json.dumps(listed, indent=1))
        return
    for state, entries in listed.items():
        for job in entries:
            job_id = str(job.get("id", ""))
            source = job_source(job, client.log_head)
            click.echo(f"{state:9} {job_id:40} source={source:12} "
                       f"start={job.get('start_time') or '-'} end={job.get('end_time') or '-'}")


@main.command("cancel")
@click.argument("job")
@click.option("--target", default="local", show_default=True)
def cancel(job: str, target: str) -> None:
    """Cancel a scrapyd job (a running crawl gets SIGTERM: it finishes and returns its leases)."""
    click.echo(f"{job}: was {_scrapyd(target).cancel(job)}, sent SIGTERM")


@main.command("scrapyd-conf")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--username", default="recordhound", show_default=True)
def scrapyd_conf(folder: str, username: str) -> None:
    """Write FOLDER/scrapyd.conf from the project's template with a generated password (mode 0600)."""
    import re
    import secrets
    from pathlib import Path

    template = Path(__file__).resolve().parents[1] / "scrapyd" / "scrapyd.conf"
    if not template.is_file():
        raise click.ClickException(f"no template at {template}: run from a checkout of recordhound")
    target = Path(folder) / "scrapyd.conf"
    if target.exists():
        raise click.ClickException(f"{target} exists; remove it first (its password would be lost)")
    password = secrets.token_urlsafe(24)
    text = re.sub(r"(?m)^password\s*=.*$", f"password          = {password}", template.read_text())
    text = re.sub(r"(?m)^username\s*=.*$", f"username          = {username}", text)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    click.echo(f"wrote {target}; for `recordhound schedule`:\n"
               f"export SCRAPYD_USERNAME={username} SCRAPYD_PASSWORD={password}")


DEMO_LOG = os.path.join(".recordhound", "logs", "demo.log")


@main.command("demo")
@click.option("--releases", default=500, show_default=True, type=click.IntRange(20))
@click.option("--seed", default=1, show_default=True)
@click.option("--epoch", default=0, show_default=True, type=click.IntRange(0))
@click.option("--review", is_flag=True,
              help="send unknown names to the review queue (default: a trusted first import creates them)")
@click.option("--verbose", "-v", is_flag=True, help=f"Scrapy's log on stderr instead of {DEMO_LOG}")
@click.argument("scrapy_args", nargs=-1, type=click.UNPROCESSED)
def demo(releases: int, seed: int, epoch: int, review: bool, verbose: bool, scrapy_args: tuple[str, ...]) -> None:
    """Start the demo shop on a free port and run `scrapy crawl catalog -a source=demo` on it.

    A progress line while it runs, then the crawl's summary; Scrapy's log goes to a file
    (-v: to stderr). Arguments after `--` go to `scrapy crawl`."""
    from recordhound.demo.process import ShopProcess

    trust = () if review else ("-s", "RECORDHOUND_TRUST_NEW_ENTITIES=true")
    quiet: tuple[str, ...] = ()
    if not verbose:
        os.makedirs(os.path.dirname(DEMO_LOG), exist_ok=True)
        quiet = ("-s", f"LOG_FILE={DEMO_LOG}", "-s", "LOG_FILE_APPEND=False", "-s", "RECORDHOUND_PROGRESS_SECONDS=0.5")
    with ShopProcess(releases, seed, epoch) as shop:
        command = ["scrapy", "crawl", "catalog", "-a", "source=demo", "-a", f"base_url={shop.url}",
                   *trust, *quiet, *scrapy_args]
        click.echo(f"demo shop at {shop.url} ({releases} releases, seed {seed}, epoch {epoch})", err=True)
        click.echo(f"crawling it: scrapy crawl catalog -a source=demo"
                   f"{'' if verbose else f' (Scrapy log: {DEMO_LOG}; -v shows it here)'}", err=True)
        env = {**os.environ, "SCRAPY_SETTINGS_MODULE": os.environ.get(
            "SCRAPY_SETTINGS_MODULE", "recordhound.settings")}
        crawl = subprocess.Popen([sys.executable, "-m", "scrapy", *command[1:]], env=env)
        with sigint_ignored():  # the terminal's Ctrl-C is the crawl's (``subprocess.call`` killed it 0.25 s
            code = crawl.wait()  # after one: its last batch, acks and leases cut); the shop ignores it too
    raise SystemExit(code)


@main.command("apply")
@setting_option
@click.option("--follow", is_flag=True, help="keep running and apply decisions as they come")
def apply_command(follow: bool) -> None:
    """Carry out the approved decisions: product-DB writes, then completed (or failed)."""
    from recordhound.config import ReviewConfig

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    counts = run_apply(follow)
    click.echo(f"applied {counts['completed']} decisions, {counts['failed']} failed "
               f"({ReviewConfig.from_settings(current_settings()).backend} queue)")


def run_apply(follow: bool, progress: Progress | None = None) -> Counter[str]:
    """Run the apply worker over the project's database and review queue. Following, it is a daemon: a product
    DB or Redis that does not answer yet is waited for (one line per try), as ``worker`` waits for its, and
    SIGTERM stops it as Ctrl-C does: after the batch in hand (``catalog.stop``)."""
    from recordhound.catalog.apply import OUTAGE_CAP_SECONDS, open_worker
    from recordhound.catalog.stop import StopAfterBatch
    from recordhound.preflight import when_reachable

    with StopAfterBatch().installed(follow) as stop:
        try:
            if follow:
                worker = when_reachable(lambda: open_worker(current_settings()), current_settings, "starting",
                                        OUTAGE_CAP_SECONDS)
            else:
                worker = open_worker(current_settings())
        except KeyboardInterrupt:
            return Counter()
        stop.worker = worker
        try:
            return worker.run(follow=follow, stop=stop.requested, progress=progress)
        except KeyboardInterrupt:
            return worker.counts


def _register() -> None:
    """The command groups kept beside what they work on."""
    from recordhound.admin.cli import register as admin
    from recordhound.alerts.cli import register as alerts
    from recordhound.frontier.cli import register as frontier
    from recordhound.jobs.cli import register as jobs
    from recordhound.review.cli import register as review
    from recordhound.sources.cli import register as sources

    for register in (frontier, sources, admin, review, jobs, alerts):
        register(main)


_register()


def run() -> None:
    """An error a user can fix is one ``error:`` line: exit 1 for a profile, 75 (EX_TEMPFAIL) for a service
    that cannot be reached now (``Unavailable``: the same command is worth running again), 2 for the rest."""
    from recordhound.exceptions import ProfileError, Unavailable

    try:
        main(standalone_mode=True)
    except RecordhoundError as exc:
        if _debug["traceback"]:
            import traceback

            traceback.print_exc()
        click.echo(f"error: {exc}", err=True)
        code = 1 if isinstance(exc, ProfileError) else Unavailable.EXIT_CODE if isinstance(exc, Unavailable) else 2
        raise SystemExit(code) from exc
