"""A shop's profile drafted in the background (for the admin): `recordhound profile draft`, then
`recordhound profile test -v` on sample pages (the per-field preview and the survey), as child
processes whose output is kept in files beside the draft, so a restarted admin still shows it.

Files of draft NAME in the drafts folder: NAME.yaml (the profile), NAME.draft.txt and
NAME.test.txt (what the two commands printed), NAME.status (running | ready | failed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from recordhound.exceptions import RecordhoundError

NAME = re.compile(r"[a-z0-9_]{1,60}")
PREVIEW_PAGES = 5  # sample product pages the preview applies the drafted profile to
COMMAND_TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class DraftState:
    name: str
    status: str  # running | ready | failed | missing
    profile: str
    draft_output: str
    test_output: str


def start(folder: str, url: str, name: str, settings_args: list[str]) -> None:
    """Draft a profile for the shop whose listing page is ``url``, in a background thread."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise RecordhoundError(f"expected an absolute http(s) URL of a listing page, got {url!r}")
    if not NAME.fullmatch(name):
        raise RecordhoundError(f"source name {name!r}: use 1-60 of a-z, 0-9 and _")
    base = Path(folder)
    base.mkdir(parents=True, exist_ok=True)
    (base / f"{name}.status").write_text("running")
    threading.Thread(target=_run, args=(base, url, name, settings_args), name=f"draft-{name}", daemon=True).start()


def _run(base: Path, url: str, name: str, settings_args: list[str]) -> None:
    profile = base / f"{name}.yaml"
    command = [sys.executable, "-m", "recordhound"]
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": os.environ.get("SCRAPY_SETTINGS_MODULE", "recordhound.settings")}
    steps = [("draft", ["profile", "draft", url, "--name", name, "-o", str(profile)]),
             ("test", ["profile", "test", str(profile), "-v", "--pages", str(PREVIEW_PAGES)])]
    status = "ready"
    for step, args in steps:
        try:
            done = subprocess.run([*command, *args, *settings_args], env=env, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_SECONDS)
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired:
            output, code = f"timed out after {COMMAND_TIMEOUT_SECONDS} s", 1
        (base / f"{name}.{step}.txt").write_text(output)
        if code != 0:
            status = "failed"
            break
    (base / f"{name}.status").write_text(status)


def state(folder: str, name: str) -> DraftState:
    base = Path(folder)
    if not NAME.fullmatch(name) or not (base / f"{name}.status").exists():
        return DraftState(name, "missing", "", "", "")

    def read(suffix: str) -> str:
        path = base / f"{name}{suffix}"
        return path.read_text(errors="replace") if path.exists() else ""

    return DraftState(name, read(".status").strip(), read(".yaml"), read(".draft.txt"), read(".test.txt"))


def save(folder: str, name: str, profiles_dir: str) -> str:
    """Copy a ready draft into the profiles folder; returns the profile's path."""
    found = state(folder, name)
    if found.status != "ready":
        raise RecordhoundError(f"draft {name!r} is {found.status}, not ready to save")
    target = Path(profiles_dir) / f"{name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(folder) / f"{name}.yaml", target)
    return str(target.resolve())
