"""The product database: SQLAlchemy 2 models, engines, migrations and batched upserts."""

from __future__ import annotations

import os
from typing import Any

# libpq's connect_timeout unless the URL sets one: a server that takes the connection and never
# answers (a frozen host, a stalled network) is an unreachable database (an outage, retried), not a hang
PG_CONNECT_TIMEOUT_SECONDS = 10


def pg_connect_args(url: str) -> dict[str, Any]:
    """A PostgreSQL connection's arguments beside its URL's: the connect timeout, unless the URL, a
    service file it names, or libpq's environment (``PGCONNECT_TIMEOUT``, ``PGSERVICE``) may say another."""
    if any(f"{key}=" in url for key in ("connect_timeout", "service")) or \
            os.environ.get("PGCONNECT_TIMEOUT") or os.environ.get("PGSERVICE"):
        return {}  # read in the text: a password may hold a '?' or '#' that a URL parser stops at
    return {"connect_timeout": PG_CONNECT_TIMEOUT_SECONDS}
