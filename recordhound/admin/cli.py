"""`recordhound admin` (the web admin, its logins) and `recordhound metrics` (Prometheus)."""

from __future__ import annotations

import sys

import click

from recordhound.cli_settings import current_settings, frontier_config, setting_option


@click.group("admin", invoke_without_command=True)
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


@click.command("metrics")
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
    found = registry(frontier_config(), engine, open_queue(ReviewConfig.from_settings(settings)))
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


def register(main: click.Group) -> None:
    main.add_command(admin)
    main.add_command(metrics)
