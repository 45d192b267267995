"""Login throttling: after a few wrong passwords for one user name, or from one address, each
further attempt must wait, twice as long each time (in this process; a restart forgets)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

FREE_FAILURES = 5  # wrong passwords allowed without a wait
WINDOW_SECONDS = 900.0  # failures older than this are forgotten
MAX_WAIT_SECONDS = 300.0


@dataclass
class _Record:
    failures: int = 0
    last: float = 0.0


@dataclass
class LoginThrottle:
    clock: Callable[[], float] = time.monotonic
    records: dict[str, _Record] = field(default_factory=dict)

    def wait(self, keys: list[str]) -> float:
        """Seconds until the next attempt for these keys is allowed (0: now)."""
        now = self.clock()
        longest = 0.0
        for key in keys:
            record = self.records.get(key)
            if record is None or now - record.last > WINDOW_SECONDS:
                continue
            if record.failures >= FREE_FAILURES:
                delay = min(MAX_WAIT_SECONDS, 2.0 ** (record.failures - FREE_FAILURES + 1))
                longest = max(longest, record.last + delay - now)
        return max(0.0, longest)

    def failed(self, keys: list[str]) -> None:
        now = self.clock()
        for key in keys:
            record = self.records.get(key)
            if record is None or now - record.last > WINDOW_SECONDS:
                record = self.records[key] = _Record()
            record.failures += 1
            record.last = now

    def succeeded(self, keys: list[str]) -> None:
        for key in keys:
            self.records.pop(key, None)
