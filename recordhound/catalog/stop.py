"""How ``recordhound apply`` stops: a first stop lets the batch in hand finish, a second ends it at once.

A following worker is a daemon (a service manager's SIGTERM stops it), a one-off run is stopped with
Ctrl-C. Interrupting a batch loses nothing (its jobs stay leased and come back when the lease runs out,
their writes idempotent), but its decisions then wait ``RECORDHOUND_APPLY_LEASE_SECONDS`` for another
worker; so a stop that comes while the worker holds a batch (from its lease to its acks) is heard between
batches, as ``recordhound worker`` lets its job's crawl finish. A stop while the worker holds nothing
(opening, idle, waiting for its queue) ends it at once, as does a second stop.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Protocol

logger = logging.getLogger(__name__)


class Holder(Protocol):
    busy: bool  # the worker holds a batch: from its lease to its acks


class StopAfterBatch:
    """The SIGINT (and, following, SIGTERM) handler of ``run_apply``: ``requested()`` is the worker's ``stop``."""

    def __init__(self) -> None:
        self.worker: Holder | None = None
        self.stopping = False

    def requested(self) -> bool:
        return self.stopping

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping or self.worker is None or not self.worker.busy:
            raise KeyboardInterrupt
        self.stopping = True
        logger.warning("Stopping once the batch in hand is applied (%s again stops at once)",
                       signal.Signals(signum).name)

    @contextmanager
    def installed(self, follow: bool) -> Iterator[StopAfterBatch]:
        """Ctrl-C (unless ignored: a background job's), and SIGTERM for a following worker (a one-off run
        stopped is no success: SIGTERM still kills it), handled here; the handlers before are put back."""
        signums = [signal.SIGTERM] if follow else []
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signums.append(signal.SIGINT)
        before = {signum: signal.getsignal(signum) for signum in signums}
        for signum in signums:
            signal.signal(signum, self)
        try:
            yield self
        finally:
            for signum, handler in before.items():
                signal.signal(signum, handler)
