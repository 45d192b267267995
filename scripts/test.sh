#!/usr/bin/env bash
# The test command: install recordhound with its test, deploy and docs dependencies into .venv, make sure the
# services the tests use are up, type-check, and run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade "pip>=24,<27"
.venv/bin/python -m pip install -q -e ".[test,deploy,docs]"
bash scripts/services.sh
bash scripts/chromium.sh
.venv/bin/mypy  # configured in pyproject.toml: recordhound/ type-checks clean, or nothing runs
exec .venv/bin/python -m pytest "$@"
