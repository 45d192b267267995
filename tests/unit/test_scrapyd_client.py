"""The scrapyd client against cassettes recorded from a real scrapyd (tests/cassettes/record_scrapyd.py)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import betamax
import pytest
import requests

from recordhound.scrapyd_client import ScrapydClient, ScrapydError, Target, job_source

CASSETTES = Path(__file__).parents[1] / "cassettes"
URL = "http://scrapyd.test:6800"
USER, PASSWORD = "recordhound", "test-secret"


@pytest.fixture
def replay() -> Iterator[Callable[[str, Target], Any]]:
    sessions: list[Any] = []

    def client(cassette: str, target: Target) -> ScrapydClient:
        session = requests.Session()
        recorder = betamax.Betamax(session, cassette_library_dir=str(CASSETTES))
        recorder.use_cassette(cassette, record="none", match_requests_on=["method", "uri", "body"])
        recorder.start()
        sessions.append(recorder)
        return ScrapydClient(target, session)

    with betamax.Betamax.configure() as config:
        config.define_cassette_placeholder("<SCRAPYD_BASIC_AUTH>", base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())
    yield client
    for recorder in sessions:
        recorder.stop()


def _target(project: str = "recordhound", password: str = PASSWORD) -> Target:
    return Target("local", URL, project, USER, password)


def test_schedule_two_nodes_list_and_cancel(replay) -> None:  # type: ignore[no-untyped-def]
    client = replay("scrapyd_schedule_jobs_cancel", _target())
    jobs = client.schedule("catalog", 2, {"CLOSESPIDER_TIMEOUT": "5"}, {"source": "demo"},
                           job_ids=["demo--rec-1", "demo--rec-2"])
    assert jobs == ["demo--rec-1", "demo--rec-2"]
    listed = client.jobs()
    ids = {job["id"] for state in listed.values() for job in state}
    assert {"demo--rec-1", "demo--rec-2"} <= ids
    assert all(job_source(job) == "demo" for state in listed.values() for job in state)
    assert client.cancel("demo--rec-2") == "pending"


@pytest.mark.parametrize(("cassette", "target", "message"), [
    ("scrapyd_unknown_spider", _target(), "spider 'nope' not found"),
    ("scrapyd_unknown_project", _target(project="nope"), "project 'nope' not found"),
    ("scrapyd_bad_credentials", _target(password="wrong"), "refused the credentials (401)"),
])
def test_scrapyd_errors_become_clear_messages(replay, cassette: str, target: Target, message: str) -> None:  # type: ignore[no-untyped-def]
    client = replay(cassette, target)
    with pytest.raises(ScrapydError, match=message.replace("(", r"\(").replace(")", r"\)")):
        if cassette == "scrapyd_bad_credentials":
            client.jobs()
        else:
            client.schedule("nope" if "spider" in cassette else "catalog", 1, {}, {"source": "demo"})


def test_connection_refused_and_cli_exit_code(tmp_path: Path) -> None:
    with pytest.raises(ScrapydError, match="cannot reach scrapyd at http://127.0.0.1:1"):
        ScrapydClient(Target("local", "http://127.0.0.1:1", "recordhound")).jobs()
    (tmp_path / "scrapy.cfg").write_text("[deploy:local]\nurl = http://127.0.0.1:1\nproject = recordhound\n")
    done = subprocess.run([sys.executable, "-m", "recordhound", "schedule", "demo", "--nodes", "2"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "SCRAPYD_PASSWORD": "x"})
    assert done.returncode == 2
    assert "error: cannot reach scrapyd at http://127.0.0.1:1 (target 'local')" in done.stderr


def test_credentials_come_from_the_environment_over_scrapy_cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "scrapy.cfg"
    cfg.write_text("[deploy:prod]\nurl = http://h:6800/\nproject = rh\nusername = a\npassword = b\n")
    assert Target.from_config("prod", str(cfg)) == Target("prod", "http://h:6800", "rh", "a", "b")
    monkeypatch.setenv("SCRAPYD_PASSWORD", "from-env")
    assert Target.from_config("prod", str(cfg)).password == "from-env"
    with pytest.raises(ScrapydError, match="no target 'nope'"):
        Target.from_config("nope", str(cfg))
