"""Crash points: the spec's forms, and a page that kills the crawler every time it is reached."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from recordhound import failpoints
from recordhound.exceptions import ConfigError


def test_a_spec_names_a_hit_number_or_a_page() -> None:
    assert failpoints.parse("store.after_commit=kill@3, frontier.before_flush=stop") == {
        "store.after_commit": ("kill", 3), "frontier.before_flush": ("stop", 1)}
    assert failpoints.parse("spider.output_exhausted=kill@/release/7") == {
        "spider.output_exhausted": ("kill", "/release/7")}


@pytest.mark.parametrize("spec", ["nowhere=kill", "store.after_commit=explode", "store.after_commit=kill@0",
                                  "store.after_commit=kill@three"])
def test_a_bad_spec_is_a_start_up_error_naming_it(spec: str) -> None:
    with pytest.raises(ConfigError, match=failpoints.ENV):
        failpoints.parse(spec)


def test_a_page_crash_point_kills_at_that_page_only_each_time() -> None:
    script = ("from recordhound import failpoints\n"
              "for url in ('http://shop/release/70', 'http://shop/release/7?x', 'http://shop/release/77'):\n"
              "    failpoints.hit('spider.output_exhausted', url)\n"
              "print('alive', flush=True)\n"
              "failpoints.hit('spider.output_exhausted', 'http://shop/release/7')\n"
              "print('not reached', flush=True)\n")
    env = {**os.environ, failpoints.ENV: "spider.output_exhausted=kill@/release/7"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (-signal.SIGKILL, "alive\n"), done.stderr


ROOT = Path(__file__).resolve().parents[2]


def _named(pattern: str, *paths: Path) -> set[str]:
    return {name for path in paths for name in re.findall(pattern, path.read_text(encoding="utf-8"))}


def test_every_crash_point_is_documented_reached_in_the_code_and_killed_at_by_a_test() -> None:
    """The crash-safety page's table, the ``hit`` calls and the tests that kill there name the same
    points as ``POINTS``: a point added, renamed or dropped in one place fails here."""
    doc = (ROOT / "docs/concepts/crash-safety.md").read_text(encoding="utf-8")
    table = [line for line in doc.splitlines() if line.startswith("| `")]
    documented = [name for line in table for name in re.findall(r"`([a-z_]+\.[a-z_]+)`", line.split(" | ")[0])]
    assert sorted(documented) == sorted(failpoints.POINTS), "docs/concepts/crash-safety.md's table"
    reached = _named(r'failpoints\.hit\(\s*"([a-z_.]+)"', *(ROOT / "recordhound").rglob("*.py"))
    assert reached == set(failpoints.POINTS), "failpoints.hit calls in recordhound/"
    here = Path(__file__).resolve()
    tests = [path for path in (ROOT / "tests").rglob("test_*.py") if path.resolve() != here]
    exercised = _named(r"([a-z]+\.[a-z_]+)=(?:kill|stop|hang|%s)", *tests) | _named(r'"([a-z]+\.[a-z_]+)"', *tests)
    assert set(failpoints.POINTS) - exercised == set(), "crash points no test sets"
