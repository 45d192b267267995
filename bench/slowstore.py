"""A deliberately slow product store for the memory check of ``bench/scale.py --slow-store``.

recordhound has no knob (yet) that slows its own writer, so the bench slows the database instead:
the crawl reaches PostgreSQL through ``tests.faultproxy.FaultProxy``, which every PERIOD seconds
freezes every connection for STALL seconds (nothing forwarded, nothing lost: a frozen network).
With "0.75/1" the writer gets a quarter of the wall clock, so it falls behind a fast crawl and the
crawler must hold back (or buffer: the memory check shows which).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import make_url

from tests.faultproxy import FaultProxy


def parse_slowness(text: str) -> tuple[float, float]:
    """"STALL/PERIOD" in seconds, 0 < STALL < PERIOD; a user error names the accepted form."""
    try:
        stall, period = (float(part) for part in text.split("/"))
    except ValueError:
        raise SystemExit(f"error: --slow-store {text!r}: expected STALL/PERIOD in seconds, e.g. 0.75/1") from None
    if not 0 < stall < period:
        raise SystemExit(f"error: --slow-store {text!r}: STALL must be above 0 and below PERIOD")
    return stall, period


@contextmanager
def slow_database_url(database_url: str, slowness: str) -> Iterator[str]:
    """``database_url`` rewritten to go through a proxy that stalls as ``slowness`` says."""
    stall, period = parse_slowness(slowness)
    url = make_url(database_url)
    done = threading.Event()
    with FaultProxy(url.port or 5432, url.host or "127.0.0.1") as proxy:
        def stall_forever() -> None:
            while not done.wait(period):
                proxy.stall(stall)

        thread = threading.Thread(target=stall_forever, name="slow-store", daemon=True)
        thread.start()
        try:
            yield url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        finally:
            done.set()
            thread.join(period + 1)
