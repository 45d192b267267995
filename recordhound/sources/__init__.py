"""Source profiles: one declarative YAML file per shop, validated on load.

The loader (YAML, the profile schema, the structured-data readers and through them Scrapy) is
imported on first use of ``find_profile``/``load_profile``: the store's writer process imports
``recordhound.sources.title_rules`` and ``profile`` and needs none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recordhound.sources.profile import FieldSpec, LinkSpec, PriceSpec, Profile, SelectorSpec

if TYPE_CHECKING:
    from recordhound.sources.loader import find_profile, load_profile

__all__ = [
    "FieldSpec",
    "LinkSpec",
    "PriceSpec",
    "Profile",
    "SelectorSpec",
    "find_profile",
    "load_profile",
]


def __getattr__(name: str) -> Any:
    if name in ("find_profile", "load_profile"):
        from recordhound.sources import loader

        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
