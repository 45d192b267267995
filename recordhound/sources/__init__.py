"""Source profiles: one declarative YAML file per shop, validated on load."""

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
