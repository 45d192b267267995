"""Source profiles: one declarative YAML file per shop, validated on load.

Every name here is imported on first use: the loader (YAML, the profile schema, the structured-data
readers and through them Scrapy) by ``find_profile``/``load_profile``, the profile's types (and the
price parser they use) by theirs. The store's writer process imports ``recordhound.sources.title_rules``
and ``profile`` and needs none of the loader; the ``recordhound`` command imports ``sources.cli`` to
list its commands and needs neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recordhound.sources.loader import find_profile, load_profile
    from recordhound.sources.profile import FieldSpec, LinkSpec, PriceSpec, Profile, SelectorSpec

__all__ = [
    "FieldSpec",
    "LinkSpec",
    "PriceSpec",
    "Profile",
    "SelectorSpec",
    "find_profile",
    "load_profile",
]
_FROM = {"find_profile": "loader", "load_profile": "loader", "FieldSpec": "profile", "LinkSpec": "profile",
         "PriceSpec": "profile", "Profile": "profile", "SelectorSpec": "profile"}


def __getattr__(name: str) -> Any:
    if name in _FROM:
        import importlib

        return getattr(importlib.import_module(f"recordhound.sources.{_FROM[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
