"""Child processes that a terminal's Ctrl-C must not reach: a child started inside ``sigint_ignored``
inherits SIGINT ignored (Python keeps an inherited SIG_IGN), while the signals that end a whole process
group (SIGTERM, SIGHUP, SIGKILL) still reach it. The store's writer (its crawler decides when it
stops) and the demo's shop (it serves the crawl's graceful stop) are started so."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
