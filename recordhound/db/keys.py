"""Natural keys of releases: what makes two product pages the same release."""

from __future__ import annotations

import hashlib

from recordhound.db.models import KEY_LEN
from recordhound.items import Release
from recordhound.text import catalog_number_key, name_key


def release_key(item: Release, numbered: bool = True) -> str:
    """Label + (first) catalogue number when the shop prints both, else (or when not ``numbered``:
    that key names another record already) artists + title + year."""
    numbers = item.numbers()
    if numbered and item.label and numbers:
        key = f"cat:{name_key(item.label)}|{catalog_number_key(numbers[0])}"
    else:
        artists = "+".join(name_key(a) for a in item.artists)
        key = f"rel:{artists}|{name_key(item.title)}|{item.year or ''}"
    if len(key) > KEY_LEN:
        key = "sha1:" + hashlib.sha1(key.encode()).hexdigest()
    return key
