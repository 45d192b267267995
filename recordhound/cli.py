"""The `recordhound` command: demo shop, database schema, and the one-command demo crawl."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

import click

from recordhound.cli_settings import current_settings, setting_option
from recordhound.exceptions import RecordhoundError

if TYPE_CHECKING:
    from recordhound.config import FrontierConfig
    from recordhound.demo.catalog import Catalog
    from recordhound.scrapyd_client import ScrapydClient
    from recordhound.catalog.apply import Progress


_debug = {"traceback": False}


@click.group()
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


def _frontier_config() -> FrontierConfig:
    from recordhound.config import FrontierConfig

    return FrontierConfig.from_settings(current_settings())


def _setting(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list[tuple[str, str]]:
    """NAME=VALUE pairs of an option passed on to scrapyd (`schedule --setting/--arg`)."""
    pairs = []
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}")
        pairs.append((name, setting))
    return pairs


@main.group()
@setting_option
def frontier() -> None:
    """The persistent frontier (embedded, or Redis when REDIS_URL is set)."""


@frontier.command("status")
@click.option("--source", "crawl", default=None, help="one crawl (default: every crawl found)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def frontier_status(crawl: str | None, as_json: bool) -> None:
    """Queued / leased (by node) / done / failed counts and the seen-set size."""
    import json

    from recordhound.frontier.status import known_crawls, status

    config = _frontier_config()
    crawls = [crawl] if crawl else known_crawls(config)
    reports = [status(config, name) for name in crawls]
    if as_json:
        click.echo(json.dumps(reports, indent=1))
        return
    if not reports:
        click.echo(f"no crawl state found ({config.backend} frontier)")
    for report in reports:
        click.echo(f"{report['crawl']} [{report['status']}, {config.backend}]: "
                   f"{report['queued']} queued, {report['leased']} leased, {report['done']} done, "
                   f"{report['failed']} failed, {report['seen']} seen")
        for node, count in sorted(report["leased_by_node"].items()):
            click.echo(f"  leased by {node}: {count}")
        for node, info in sorted(report["nodes"].items()):
            click.echo(f"  node {node}: pid {info['pid']} on {info['host']}, "
                       f"heartbeat {info['heartbeat_age_seconds']} s ago")
        if report["waiting_for_retry"]:
            click.echo(f"  waiting for a retry: {report['waiting_for_retry']} (of the queued)")
        if report["due"]:
            click.echo(f"  rechecks due now: {report['due']} (fetched by the next node that runs)")
        if report["scheduled"]:
            click.echo(f"  scheduled for a recheck: {report['scheduled']} ({report['due_within_hour']} "
                       f"due in the next hour)")
        for reason, count in report["failed_by_reason"].items():
            click.echo(f"  failed, {reason}: {count}")


@frontier.command("failed")
@click.option("--source", "crawl", default=None, help="one crawl (default: every crawl found)")
@click.option("--reason", default=None, help='one reason group ("http_404") or text in the reason')
@click.option("--json", "as_json", is_flag=True, help="every dead letter with its attempt history")
def frontier_failed(crawl: str | None, reason: str | None, as_json: bool) -> None:
    """Requests that failed for good (dead letters), grouped by reason."""
    import json

    from recordhound.frontier.status import known_crawls, matching, opened, reason_kind

    config = _frontier_config()
    found: list[dict[str, object]] = []
    for name in [crawl] if crawl else known_crawls(config):
        with opened(config, name) as backend:
            letters = matching(backend.dead_letters(), reason)
        found += [{"crawl": name, "id": d.id, "url": d.url, "reason": d.reason, "group": reason_kind(d.reason),
                   "at": d.at, "attempts": d.history} for d in letters]
    if as_json:
        click.echo(json.dumps(found, indent=1))
        return
    if not found:
        click.echo("no failed requests" + (f" with reason {reason!r}" if reason else ""))
        return
    groups: dict[tuple[object, object], list[dict[str, object]]] = {}
    for letter in found:
        groups.setdefault((letter["crawl"], letter["group"]), []).append(letter)
    for (crawl_name, group), members in sorted(groups.items(), key=lambda g: (str(g[0][0]), -len(g[1]))):
        click.echo(f"{crawl_name}: {group}: {len(members)}")
        for letter in members:
            history = letter["attempts"]
            tried = f", {len(history)} attempts" if isinstance(history, list) and len(history) > 1 else ""
            click.echo(f"  {letter['url']}  ({letter['reason']}{tried})")


@frontier.command("retry")
@click.option("--source", "crawl", required=True, help="the crawl whose dead letters go back")
@click.option("--reason", default=None, help='only this reason group ("http_503") or text in the reason')
@click.option("--url", default=None, help="only this URL")
@click.option("--all", "everything", is_flag=True, help="every dead letter of the crawl")
def frontier_retry(crawl: str, reason: str | None, url: str | None, everything: bool) -> None:
    """Put dead letters back in the queue; a running crawl picks them up, the next crawl of a
    completed one fetches exactly these (it is not started anew)."""
    from recordhound.frontier.status import matching, opened

    if not (everything or reason or url):
        raise click.UsageError("say which: --reason R, --url U, or --all")
    config = _frontier_config()
    with opened(config, crawl) as backend:
        letters = matching(backend.dead_letters(), reason, url)
        moved = backend.requeue_failed([d.id for d in letters])
        status = backend.counts().status
    if not moved:
        raise click.ClickException(f"no failed request of crawl {crawl!r} matches")
    click.echo(f"{crawl}: {moved} failed requests queued again (crawl {status}); "
               f"run `scrapy crawl catalog -a source={crawl}` or let the running nodes take them")


@frontier.command("reset")
@click.option("--source", "crawl", required=True, help="the crawl to forget")
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
def frontier_reset(crawl: str, yes: bool) -> None:
    """Forget one crawl's queue, leases and seen-set (the next crawl starts from scratch)."""
    from recordhound.frontier.status import reset, status

    config = _frontier_config()
    report = status(config, crawl)
    click.echo(f"{crawl}: {report['queued']} queued, {report['leased']} leased, {report['seen']} seen")
    if not yes:
        click.confirm(f"Reset the {config.backend} frontier of crawl {crawl!r}?", abort=True)
    reset(config, crawl)
    click.echo(f"{crawl}: frontier reset")


@frontier.command("verify")
@click.option("--source", "crawl", default=None, help="one crawl (default: every crawl found)")
def frontier_verify(crawl: str | None) -> None:
    """Check a crawl's stored state for inconsistencies; exit 1 when any is found."""
    from recordhound.frontier.status import known_crawls, verify

    config = _frontier_config()
    found = 0
    for name in [crawl] if crawl else known_crawls(config):
        problems = verify(config, name)
        found += len(problems)
        click.echo(f"{name}: {'consistent' if not problems else f'{len(problems)} problems'}")
        for problem in problems:
            click.echo(f"  {problem}")
    if found:
        raise SystemExit(1)


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


@main.group()
def profile() -> None:
    """Source profiles."""


@profile.command("test")
@click.argument("source")
@click.option("--cassette", default=None, type=click.Path(exists=True, dir_okay=False),
              help="read the pages of a cassette (RECORDHOUND_CASSETTE_MODE=record) instead of the shop")
@click.option("--url", default=None, help="check this page only")
@click.option("--pages", default=20, show_default=True, type=click.IntRange(1),
              help="live: how many product pages to fetch from the first start URL")
@click.option("--base-url", default=None, help="live: another copy of the shop (as `-a base_url=` of a crawl)")
@click.option("--verbose", "-v", is_flag=True, help="print every page's report, not only the summary")
def profile_test(source: str, cassette: str | None, url: str | None, pages: int, base_url: str | None,
                 verbose: bool) -> None:
    """Apply SOURCE's profile to product pages (a cassette's, or fetched live from the shop) and
    report what looks wrong: fields found on part of the pages, price outliers per currency."""
    from urllib.parse import urljoin

    from scrapy.http import TextResponse

    from recordhound.middlewares.cassette import load_responses
    from recordhound.sources import load_profile
    from recordhound.sources.check import Survey, check_profile
    from recordhound.sources.extract import extract_links
    from recordhound.sources.fetch import fetch_samples
    from recordhound.sources.schema import with_base_url

    project = current_settings()
    loaded = load_profile(source, project.getlist("RECORDHOUND_PROFILES_DIRS"))
    if base_url:
        loaded = with_base_url(loaded, base_url)
    if cassette:
        responses = [r for r in load_responses(cassette) if isinstance(r, TextResponse) and r.status == 200
                     and (url is None or r.url == url)]
        if url is not None and not responses:
            raise click.ClickException(f"{url} is not a 200 text page of {cassette}")
    else:
        if not loaded.start_urls:
            raise click.UsageError(f"source {source!r} has no start_urls to fetch; give --cassette")
        product = loaded.links["product"].selectors
        listings = tuple(s for kind, link in loaded.links.items() if kind != "product" for s in link.selectors)
        fetched = fetch_samples(urljoin(loaded.base_url, loaded.start_urls[0]), [url] if url else [],
                                lambda listing: [] if url else extract_links(listing, product), project, pages,
                                follow=lambda listing: extract_links(listing, listings))
        for error in fetched.errors:
            click.echo(f"fetch failed: {error}", err=True)
        if fetched.listing is None:
            raise click.ClickException(f"cannot fetch the start page of {source!r}; see above")
        responses = fetched.products
    survey = Survey(loaded)
    for page in responses:
        report = check_profile(loaded, page)
        if url is None and not report.is_product:
            continue  # not a product page
        survey.add(report)
        if verbose or url is not None:
            click.echo(report)
    click.echo("\n".join(survey.lines()))


@profile.command("draft")
@click.argument("url")
@click.option("--product", "products", multiple=True, help="a product page of the shop (repeatable)")
@click.option("--name", default=None, help="the source name (default: from the host name)")
@click.option("--output", "-o", default=None, type=click.Path(dir_okay=False),
              help="write the profile here (default: profiles/NAME.yaml)")
@click.option("--samples", default=3, show_default=True, type=click.IntRange(1, 20),
              help="product pages to learn from when no --product is given")
def profile_draft(url: str, products: tuple[str, ...], name: str | None, output: str | None, samples: int) -> None:
    """Propose a profile for the shop whose listing page is URL: structured data, product and
    pagination links; writes it as commented YAML to check with `profile test`."""
    import re
    from pathlib import Path
    from urllib.parse import urlparse

    from recordhound.sources import load_profile
    from recordhound.sources.draft import draft_profile, product_link_candidates
    from recordhound.sources.draft_shops import store_api_probes
    from recordhound.sources.fetch import fetch_samples

    host = urlparse(url).hostname or ""
    if urlparse(url).scheme not in ("http", "https") or not host:
        raise click.UsageError(f"expected an absolute http(s) URL of a listing page, got {url!r}")
    if name is None:
        label = "" if re.fullmatch(r"[\d.:\[\]]+", host) else host.removeprefix("www.").split(".")[0]
        name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "shop"
    target = Path(output or Path("profiles") / f"{name}.yaml")
    fetched = fetch_samples(url, list(products), product_link_candidates, current_settings(), samples,
                            probe=store_api_probes)
    for error in fetched.errors:
        click.echo(f"fetch failed: {error}", err=True)
    if fetched.listing is None:
        raise click.ClickException(f"cannot fetch the listing page {url}; see above")
    draft = draft_profile(name, fetched.listing, fetched.products, fetched.probes)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(draft.yaml(url), encoding="utf-8")
    load_profile(str(target))  # what it wrote must load
    click.echo(f"wrote {target}: {len(draft.matched)} fields found on {draft.pages} product pages "
               f"({', '.join(f'{k} {v}/{draft.pages}' for k, v in draft.matched.items())})")
    for warning in draft.warnings:
        click.echo(f"todo: {warning}")
    click.echo(f"next: recordhound profile test {target}    then: scrapy crawl catalog -a source={target}")


@main.command("import")
@click.argument("source")
@click.option("--file", "path", default=None, type=click.Path(dir_okay=False),
              help="the file to read (default: the profile's location); CSV, XLSX or JSON")
@click.option("--restart", is_flag=True, help="start at line 1 even if the last import did not finish")
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(1))
@setting_option
def import_file(source: str, path: str | None, restart: bool, batch_size: int) -> None:
    """Import a CSV/XLSX/JSON source row by row (resumes where an interrupted import stopped)."""
    import logging

    from recordhound.config import ReviewConfig, StoreConfig
    from recordhound.db.migrate import open_database
    from recordhound.catalog.writer import open_writer
    from recordhound.sources import load_profile
    from recordhound.sources.importer import FileImport
    from recordhound.sources.profile import FILE_KINDS

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    project = current_settings()
    profile = load_profile(source, project.getlist("RECORDHOUND_PROFILES_DIRS"))
    if profile.kind not in FILE_KINDS:
        raise click.UsageError(f"source {source!r} is a {profile.kind} source; crawl it with "
                               f"`scrapy crawl catalog -a source={source}`")
    store, review = StoreConfig.from_settings(project), ReviewConfig.from_settings(project)
    engine = open_database(store.database_url)
    writer = open_writer(engine, store, review, trusted=profile.trusted or review.trust_new_entities)
    job = FileImport(profile, path or profile.location, engine, writer, batch_size)
    source_id, first, total = job.prepare(restart)
    with click.progressbar(length=total, label=f"{source} lines", show_pos=True, file=sys.stderr) as bar:
        bar.update(first - 1)
        job.progress = lambda line: bar.update(line - bar.pos)
        result = job.run(source_id, first, total)
    click.echo(f"{source}: lines {result.first_line}-{result.last_line} of {result.total_lines} read; "
               f"{dict(result.counts)}")


@main.group("admin", invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@setting_option
@click.pass_context
def admin(ctx: click.Context, host: str, port: int) -> None:
    """Serve the web admin (catalog, review queue, crawl status); login required."""
    if ctx.invoked_subcommand is not None:
        return
    import logging

    import uvicorn

    from recordhound.admin.app import build_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    app = build_app(current_settings())
    click.echo(f"recordhound admin on http://{host}:{port}/admin/ (create a login: recordhound admin create-user NAME)",
               err=True)
    uvicorn.run(app, host=host, port=port, log_level="info", server_header=False)


@main.command("metrics")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=9410, show_default=True, type=click.IntRange(0, 65535))
@setting_option
def metrics(host: str, port: int) -> None:
    """Serve Prometheus metrics of every crawl, source and the review queue (as the admin's /metrics)."""
    import time

    from prometheus_client import start_http_server

    from recordhound.config import ReviewConfig, StoreConfig
    from recordhound.db.migrate import open_database
    from recordhound.metrics import registry
    from recordhound.review.factory import open_queue

    settings = current_settings()
    engine = open_database(StoreConfig.from_settings(settings).database_url)
    found = registry(_frontier_config(), engine, open_queue(ReviewConfig.from_settings(settings)))
    server, _ = start_http_server(port, addr=host, registry=found)
    click.echo(f"recordhound metrics on http://{host}:{server.server_port}/metrics", err=True)
    while True:
        time.sleep(3600)


def _read_password(prompt: str) -> str:
    """Asked for twice on a terminal; one line of stdin when piped."""
    if sys.stdin.isatty():
        return str(click.prompt(prompt, hide_input=True, confirmation_prompt=True))
    return sys.stdin.readline().rstrip("\n")


@admin.command("create-user")
@click.argument("name")
def admin_create_user(name: str) -> None:
    """Create an admin login; the password is asked for (or read from stdin when piped)."""
    from recordhound.admin.users import create_user
    from recordhound.config import StoreConfig
    from recordhound.db.migrate import open_database

    password = _read_password("Password")
    engine = open_database(StoreConfig.from_settings(current_settings()).database_url)
    user_id = create_user(engine, name, password)
    click.echo(f"admin user {name!r} created (id {user_id})")


@admin.command("set-password")
@click.argument("name")
def admin_set_password(name: str) -> None:
    """Change an admin's password (asked for, or one line of stdin); every session of the user ends."""
    from recordhound.admin.users import set_password
    from recordhound.config import StoreConfig
    from recordhound.db.migrate import open_database

    password = _read_password("New password")
    set_password(open_database(StoreConfig.from_settings(current_settings()).database_url), name, password)
    click.echo(f"password of {name!r} changed; every session of the user has ended")


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
        code = subprocess.call([sys.executable, "-m", "scrapy", *command[1:]], env=env)
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
    """Run the apply worker over the project's database and review queue."""
    from recordhound.catalog.apply import open_worker

    worker = open_worker(current_settings())
    try:
        return worker.run(follow=follow, progress=progress)
    except KeyboardInterrupt:
        return worker.counts


def _register_review() -> None:
    from recordhound.review.cli import register

    register(main)


_register_review()


def _register_jobs() -> None:
    from recordhound.jobs.cli import register

    register(main)


_register_jobs()


def _register_alerts() -> None:
    from recordhound.alerts.cli import register

    register(main)


_register_alerts()


def run() -> None:
    """An error a user can fix is one ``error:`` line: exit 1 for a profile, 2 for the rest."""
    from recordhound.exceptions import ProfileError

    try:
        main(standalone_mode=True)
    except RecordhoundError as exc:
        if _debug["traceback"]:
            import traceback

            traceback.print_exc()
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1 if isinstance(exc, ProfileError) else 2) from exc
