"""Every example in README.md and docs/ works: profiles load, commands run, settings exist.

How blocks are classified and rewritten is in ``tests/docs_examples.py``. The commands of one
page run in order in one temporary folder, against one demo shop started on a free port; a page
that names the documented PostgreSQL or Redis URL gets a database or a private redis-server of
its own in their place.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

import recordhound.settings
from recordhound.demo.process import ShopProcess
from recordhound.exceptions import ProfileError
from recordhound.sources import find_profile, load_profile
from recordhound.sources.schema import build_profile
from tests.docs_examples import KNOWN, ROOT, Block, blocks, pages, setting_names, shell_script
from tests.redisserver import RedisServer
from tests.services import PostgresDatabase

pytestmark = pytest.mark.integration
VENV_BIN = Path(sys.executable).parent
PG_DOCUMENTED = "postgresql+psycopg://postgres@127.0.0.1:5432/recordhound"
REDIS_DOCUMENTED = "redis://127.0.0.1:6379/0"
# Read from the environment by the code or the tests, not settings (checked below).
ENVIRONMENT = {"RECORDHOUND_FAILPOINTS", "RECORDHOUND_TEST_PG_URL", "RECORDHOUND_TEST_REDIS_URL",
               "RECORDHOUND_ARTIFACTS_DIR", "RECORDHOUND_FAULT_TRIALS", "RECORDHOUND_FAULT_SEED"}
PAGES = pages()


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopProcess]:
    with ShopProcess(releases=60) as running:
        yield running


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_yaml_examples_load(page: Path) -> None:
    for block in blocks(page):
        if block.lang == "yaml" and block.marker != "skip":
            _check_yaml(block)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_blocks_are_known_and_skips_say_why(page: Path) -> None:
    for block in blocks(page):
        assert block.lang in KNOWN, f"{block.where}: a ```{block.lang} block: use one of {sorted(KNOWN)}"
        if block.marker == "skip":
            assert len(block.reason) > 10, f"{block.where}: a skipped example must say why"


def test_the_readme_example_of_issue_23_is_refused() -> None:
    """The README's profile once had ``start_urls: [/catalog?page=1, /styles]``: PyYAML stops at
    the ``?`` inside a flow sequence, so the documented profile did not load."""
    old = "name: demo\nbase_url: http://127.0.0.1:8070/\nstart_urls: [/catalog?page=1, /styles]\n"
    with pytest.raises(pytest.fail.Exception, match="not valid YAML"):
        _check_yaml(Block(ROOT / "README.md", 1, "yaml", old, "", ""))


def test_every_setting_named_in_the_docs_exists() -> None:
    defined = {name for name in vars(recordhound.settings) if name.startswith("RECORDHOUND_")}
    source = "\n".join(p.read_text() for folder in ("recordhound", "tests") for p in (ROOT / folder).rglob("*.py")
                       if p.name != "test_docs_examples.py")
    for name in ENVIRONMENT:
        assert f'"{name}"' in source, f"{name} is listed as an environment variable but nothing reads it"
    for page in PAGES:
        unknown = setting_names(page.read_text()) - defined - ENVIRONMENT
        assert not unknown, f"{_id(page)} names settings that recordhound/settings.py does not define: {unknown}"


@pytest.mark.parametrize("page", [p for p in PAGES if any(b.lang in {"bash", "python"} for b in blocks(p))], ids=_id)
def test_commands_run(page: Path, shop: ShopProcess, tmp_path: Path) -> None:
    runnable = [b for b in blocks(page) if b.lang in {"bash", "python"} and b.marker != "skip"]
    text = page.read_text()
    with ExitStack() as stack:
        replacements: dict[str, str] = {}
        if PG_DOCUMENTED in text:
            replacements[PG_DOCUMENTED] = stack.enter_context(PostgresDatabase()).url
        if REDIS_DOCUMENTED in text:
            replacements[REDIS_DOCUMENTED] = stack.enter_context(_private_redis(tmp_path))
        env = _environment()
        port = int(shop.url.rstrip("/").rsplit(":", 1)[-1])
        for block in runnable:
            _run(block, port, replacements, env, tmp_path)


def _run(block: Block, port: int, replacements: dict[str, str], env: dict[str, str], folder: Path) -> None:
    if block.lang == "python":
        command = [sys.executable, "-"]
        script = block.code
    else:
        command = ["bash", "-eu", "-s"]  # no pipefail: `... | head -3` is fine as typed by hand
        script = shell_script(block.code, port, VENV_BIN, replacements)
    started = time.monotonic()
    done = subprocess.run(command, input=script, cwd=folder, env=env, capture_output=True, text=True, timeout=180)
    took = time.monotonic() - started
    assert done.returncode == 0, (f"{block.where} exited {done.returncode} after {took:.1f} s:\n{script}\n"
                                  f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["SCRAPY_SETTINGS_MODULE"] = "recordhound.settings"  # the page's folder has no scrapy.cfg
    return env


@contextmanager
def _private_redis(folder: Path) -> Iterator[str]:
    """A redis-server of this test's own on a free port (the shared one is never touched)."""
    server = RedisServer(folder / "redis-data", "--save", "", "--appendonly", "no").start()
    try:
        yield server.url
    finally:
        server.stop()


def _check_yaml(block: Block) -> None:
    try:
        document = yaml.safe_load(block.code)
    except yaml.YAMLError as exc:
        pytest.fail(f"{block.where}: not valid YAML: {exc}")
    if block.marker == "not-a-profile":
        return
    assert isinstance(document, dict), f"{block.where}: a profile example must be a mapping"
    try:
        if "name" in document:
            _load_as_file(block.code)
            return
        base = "demo_feed" if document.get("kind") in {"csv", "xlsx", "json"} else "demo"
        merged = _merge(yaml.safe_load(find_profile(base).read_text(encoding="utf-8")), document)
        build_profile(f"(merged into the {base} profile)", merged)
    except ProfileError as exc:
        pytest.fail(f"{block.where}: the profile loader refuses this example: {exc}")


def _load_as_file(code: str) -> None:
    """Through the loader exactly as a user's profiles/NAME.yaml would go."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"docs-example-{os.getpid()}.yaml"
    path.write_text(code, encoding="utf-8")
    try:
        load_profile(str(path))
    finally:
        path.unlink()


def _merge(base: Any, fragment: Any) -> Any:
    if isinstance(base, dict) and isinstance(fragment, dict):
        return {**base, **{key: _merge(base.get(key), value) for key, value in fragment.items()}}
    return fragment
