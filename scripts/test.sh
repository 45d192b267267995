#!/usr/bin/env bash
# The test command: install recordhound with its test, deploy and docs dependencies into .venv, make sure the
# services the tests use are up, type-check, and run the whole suite in two passes (tests/xdist_units.py says
# why): the modules not on the clock on 3 parallel workers, then the clock-measuring ones alone. Extra
# arguments go to both passes (a pass that selects no test is not a failure).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade "pip>=24,<27"
.venv/bin/python -m pip install -q -e ".[test,deploy,docs]"
bash scripts/services.sh
bash scripts/chromium.sh
.venv/bin/mypy  # configured in pyproject.toml: recordhound/ type-checks clean, or nothing runs
pass_() {
    local code=0
    .venv/bin/python -m pytest "$@" || code=$?
    [ "$code" -eq 0 ] || [ "$code" -eq 5 ] || exit "$code"  # 5: no test selected
}
pass_ -n 3 --dist loadfile -m "not on_the_clock" "$@"
pass_ -p no:xdist -m on_the_clock "$@"
