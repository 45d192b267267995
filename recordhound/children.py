"""Child processes that a terminal's Ctrl-C must not reach: a child started inside ``sigint_ignored``
inherits SIGINT ignored (Python keeps an inherited SIG_IGN), while the signals that end a whole process
group (SIGTERM, SIGHUP, SIGKILL) still reach it. The store's writer (its crawler decides when it
stops) and the demo's shop (it serves the crawl's graceful stop) are started inside
``sigint_ignored_by_children``: a Ctrl-C that reaches this process while the child starts is held
until it has, then handled as usual (before, it was ignored too: a crawl stopped just as its writer
spawned ran on to its end)."""

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


@contextlib.contextmanager
def sigint_ignored_by_children() -> Iterator[None]:
    """Start children in here: they ignore SIGINT; this process gets its own SIGINT after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # blocked as well as ignored: a blocked signal is never discarded as ignored, it waits, and reaches
    # this process's own handler once that is back and the signal unblocked
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with sigint_ignored():
            yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
