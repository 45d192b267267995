"""The documentation site builds with ``mkdocs build --strict`` (offline), and its generated
settings page lists every RECORDHOUND_* setting of ``recordhound/settings.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import recordhound.settings
from tests.docs_examples import ROOT

pytestmark = pytest.mark.integration


def test_mkdocs_build_strict_lists_every_setting_and_command(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-5000:]
    settings_page = (site / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    names = [name for name in vars(recordhound.settings) if name.startswith("RECORDHOUND_")]
    missing = [name for name in names if f'id="{name}"' not in settings_page]
    assert names and not missing, f"the settings page lacks {missing}"
    cli_page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("demo", "frontier status", "review approve", "schedule", "import"):
        assert f"recordhound {command}" in cli_page, f"the CLI page lacks `recordhound {command}`"
    assert "fonts.googleapis.com" not in settings_page  # nothing fetched from a CDN
