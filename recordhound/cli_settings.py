"""`-s NAME=VALUE` on recordhound's commands, as with `scrapy -s`: one option, one place that applies it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from recordhound.config import FrontierConfig

META_KEY = "recordhound.settings"


def name_value_pairs(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """``NAME=VALUE`` option values as pairs; anything else is the option's error."""
    pairs = []
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}")
        pairs.append((name, setting))
    return pairs


def _collect(ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> None:
    ctx.find_root().meta.setdefault(META_KEY, []).extend(name_value_pairs(values))


def setting_option(command: Any) -> Any:
    """Add ``-s/--set NAME=VALUE`` to a command or group; ``current_settings`` applies them."""
    return click.option("-s", "--set", "settings", multiple=True, callback=_collect, expose_value=False,
                        metavar="NAME=VALUE", help="override a setting, as with scrapy -s")(command)


def current_settings() -> BaseSettings:
    """The project's settings with every ``-s`` given on this command line."""
    from recordhound.config import project_settings

    settings = project_settings()
    ctx = click.get_current_context(silent=True)
    for pair in ctx.find_root().meta.get(META_KEY, ()) if ctx else ():
        name, value = pair
        settings.set(name, value, priority="cmdline")
    return settings


def frontier_config() -> FrontierConfig:
    """The frontier's settings, with this command line's ``-s``."""
    from recordhound.config import FrontierConfig

    return FrontierConfig.from_settings(current_settings())
