"""Record tests/cassettes/scrapyd_*.json from a real scrapyd (run by hand; the tests replay them).

    .venv/bin/pip install -e ".[deploy,test]" && .venv/bin/python tests/cassettes/record_scrapyd.py
"""

from __future__ import annotations

import base64
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import betamax  # noqa: E402
import requests  # noqa: E402

from recordhound.scrapyd_client import ScrapydClient, ScrapydError, Target  # noqa: E402
from tests.scrapyd_server import PASSWORD, USERNAME, ScrapydServer  # noqa: E402

CASSETTES = Path(__file__).parent
PLACEHOLDER_URL = "http://scrapyd.test:6800"
MATCH = ["method", "uri", "body"]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = ScrapydServer(Path(tmp)).start()
        try:
            server.upload_egg("r1")
            record(server)
        finally:
            server.stop()


def record(server: ScrapydServer) -> None:
    auth = base64.b64encode(f"{USERNAME}:{PASSWORD}".encode()).decode()
    with betamax.Betamax.configure() as config:
        config.cassette_library_dir = str(CASSETTES)
        config.define_cassette_placeholder("<SCRAPYD_BASIC_AUTH>", auth)
        config.define_cassette_placeholder(PLACEHOLDER_URL, server.url)
        config.define_cassette_placeholder("<SCRAPYD_PASSWORD>", PASSWORD)
    good = Target("local", server.url, "recordhound", USERNAME, PASSWORD)
    scenarios = {
        "scrapyd_schedule_jobs_cancel": lambda c: (
            c.schedule("catalog", 2, {"CLOSESPIDER_TIMEOUT": "5"}, {"source": "demo"},
                       job_ids=["demo--rec-1", "demo--rec-2"]),
            c.jobs(), c.cancel("demo--rec-2")),
        "scrapyd_unknown_spider": lambda c: c.schedule("nope", 1, {}, {"source": "demo"}),
    }
    for name, run in scenarios.items():
        _record(name, good, run)
    _record("scrapyd_unknown_project", Target("local", server.url, "nope", USERNAME, PASSWORD),
            lambda c: c.schedule("catalog", 1, {}, {"source": "demo"}))
    _record("scrapyd_bad_credentials", Target("local", server.url, "recordhound", USERNAME, "wrong"),
            lambda c: c.jobs())


def _record(name: str, target: Target, run) -> None:  # type: ignore[no-untyped-def]
    session = requests.Session()
    with betamax.Betamax(session).use_cassette(name, record="all", match_requests_on=MATCH):
        try:
            run(ScrapydClient(target, session))
        except ScrapydError as exc:
            print(f"{name}: {exc}")
    print(f"recorded {name}")


if __name__ == "__main__":
    main()
