"""What a process remembers of what it wrote lately, to skip asking its store again: a set of at
most ``size`` keys, the least recently added dropped first."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class Recent(Generic[K]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._keys: dict[K, None] = {}  # least recently added first

    def __contains__(self, key: K) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def covers(self, keys: Iterable[K]) -> bool:
        return all(key in self._keys for key in keys)

    def update(self, keys: Iterable[K]) -> None:
        for key in keys:
            self._keys.pop(key, None)  # added again: the most recent now
            self._keys[key] = None
        excess = len(self._keys) - self._size
        if excess > 0:
            for old in list(itertools.islice(self._keys, excess)):
                del self._keys[old]

    def clear(self) -> None:
        self._keys.clear()
