"""The product database: SQLAlchemy 2 models, engines, migrations and batched upserts."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qsl, urlsplit

# libpq's connect_timeout unless the URL sets one: a server that takes the connection and never
# answers (a frozen host, a stalled network) is an unreachable database (an outage, retried), not a hang
PG_CONNECT_TIMEOUT_SECONDS = 10


def pg_connect_args(url: str) -> dict[str, Any]:
    """A PostgreSQL connection's arguments beside its URL's: the connect timeout, unless the URL, a
    service file it names, or libpq's environment (``PGCONNECT_TIMEOUT``, ``PGSERVICE``) may say another."""
    given = {key for key, _ in parse_qsl(urlsplit(url).query)}
    if given & {"connect_timeout", "service"} or os.environ.get("PGCONNECT_TIMEOUT") or os.environ.get("PGSERVICE"):
        return {}
    return {"connect_timeout": PG_CONNECT_TIMEOUT_SECONDS}
