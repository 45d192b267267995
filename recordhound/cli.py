"""The `recordhound` command: demo shop, database schema, and the one-command demo crawl."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import click

from recordhound.exceptions import RecordhoundError


@click.group()
def main() -> None:
    """recordhound: crash-safe catalog crawls into a reviewed product database."""


@main.command("demo-shop")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8070, show_default=True, help="0 picks a free port")
@click.option("--releases", default=500, show_default=True, type=click.IntRange(20))
@click.option("--seed", default=1, show_default=True)
@click.option("--epoch", default=0, show_default=True, type=click.IntRange(0), help="price epoch")
@click.option("--export", "export_dir", default=None, help="write CSV/XLSX/JSON feeds here and exit")
def demo_shop(host: str, port: int, releases: int, seed: int, epoch: int, export_dir: str | None) -> None:
    """Serve the deterministic demo record shop (prints its base URL)."""
    from recordhound.demo.catalog import Catalog
    from recordhound.demo.process import READY_PREFIX
    from recordhound.demo.server import DemoShop, serve

    catalog = Catalog(releases, seed=seed, epoch=epoch)
    if export_dir:
        _export(catalog, export_dir)
        return
    shop = DemoShop(catalog)

    def ready(url: str) -> None:
        click.echo(f"{READY_PREFIX} {len(catalog.products)} products ({releases} releases, "
                   f"seed {seed}, epoch {epoch}) at {url}")
        sys.stdout.flush()

    try:
        asyncio.run(serve(shop, host, port, ready))
    except KeyboardInterrupt:
        pass


def _export(catalog: object, folder: str) -> None:
    from recordhound.demo import feeds

    os.makedirs(folder, exist_ok=True)
    for path, (_, render) in feeds.FEEDS.items():
        target = os.path.join(folder, os.path.basename(path))
        with open(target, "wb") as out:
            out.write(render(catalog))  # type: ignore[arg-type]
        click.echo(target)


@main.group()
def db() -> None:
    """The product database."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Create or migrate the product schema ($DATABASE_URL, else the SQLite file)."""
    from scrapy.utils.project import get_project_settings

    from recordhound.config import database_url
    from recordhound.db.engine import make_engine
    from recordhound.db.migrate import current_revision, upgrade

    engine = make_engine(database_url(get_project_settings()))
    upgrade(engine, revision)
    click.echo(f"{engine.url.render_as_string()}: schema at revision {current_revision(engine)}")


@main.command("demo")
@click.option("--releases", default=500, show_default=True, type=click.IntRange(20))
@click.option("--seed", default=1, show_default=True)
@click.option("--epoch", default=0, show_default=True, type=click.IntRange(0))
@click.argument("scrapy_args", nargs=-1, type=click.UNPROCESSED)
def demo(releases: int, seed: int, epoch: int, scrapy_args: tuple[str, ...]) -> None:
    """Start the demo shop on a free port and run `scrapy crawl catalog -a source=demo` on it."""
    from recordhound.demo.process import ShopProcess

    with ShopProcess(releases, seed, epoch) as shop:
        click.echo(f"demo shop at {shop.url}", err=True)
        command = ["scrapy", "crawl", "catalog", "-a", "source=demo", "-a", f"base_url={shop.url}",
                   *scrapy_args]
        click.echo("$ " + " ".join(command), err=True)
        env = {**os.environ, "SCRAPY_SETTINGS_MODULE": os.environ.get(
            "SCRAPY_SETTINGS_MODULE", "recordhound.settings")}
        code = subprocess.call([sys.executable, "-m", "scrapy", *command[1:]], env=env)
    raise SystemExit(code)


def run() -> None:
    try:
        main(standalone_mode=True)
    except RecordhoundError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from exc
