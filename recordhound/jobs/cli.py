"""`recordhound frontier add`, `recordhound worker` and `recordhound job ...`."""

from __future__ import annotations

import sys

import click

from recordhound.cli_settings import current_settings, setting_option


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


def register(main: click.Group) -> None:
    frontier = main.commands["frontier"]
    assert isinstance(frontier, click.Group)
    frontier.add_command(setting_option(frontier_add))
