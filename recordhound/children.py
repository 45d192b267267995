"""Child processes that a terminal's Ctrl-C must not reach, while the signals that end a whole process
group (SIGTERM, SIGHUP, SIGKILL) still reach them. ``sigint_ignored``: this process ignores SIGINT
meanwhile, and a child started inside inherits the ignore (Python keeps an inherited SIG_IGN); the
demo waits for its crawl so. The store's writer (its crawler decides when it stops) and the demo's
shop (it serves the crawl's graceful stop) are started inside ``sigint_ignored_by_children``: the
child inherits SIGINT blocked, and a Ctrl-C that reaches this process while the child starts is
handled as usual (before, this process ignored it too: a crawl stopped just as its writer spawned ran
on to its end)."""

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
    """Start children in here: they never get SIGINT; this process does, as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # Blocked, not ignored, in this thread: a child inherits the blocked mask (a blocked SIGINT is never
    # delivered to it; the writer also sets it ignored once it runs), while this process keeps its
    # handler: a SIGINT meanwhile goes to another of its threads, or waits here until unblocked. Ignoring
    # it here too lost it whenever another thread (one that does not block it) was there to take it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
