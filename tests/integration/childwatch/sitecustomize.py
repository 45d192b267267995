"""Loaded by a test's subprocess (on PYTHONPATH): records every child process it starts into
$RECORDHOUND_CHILDREN_LOG, so a test can assert that a command ran as one process."""

from __future__ import annotations

import os
import subprocess

_LOG = os.environ.get("RECORDHOUND_CHILDREN_LOG", "")


def _record(how: str) -> None:
    with open(_LOG, "a", encoding="utf-8") as out:
        out.write(f"{os.getpid()} {how}\n")


if _LOG:
    _fork, _spawn, _execute = os.fork, os.posix_spawn, subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def fork() -> int:
        _record("fork")
        return _fork()

    def posix_spawn(*args, **kwargs):  # type: ignore[no-untyped-def]
        _record("posix_spawn")
        return _spawn(*args, **kwargs)

    def execute_child(self, args, *rest, **kwargs):  # type: ignore[no-untyped-def]
        _record(f"subprocess {args!r}")
        return _execute(self, args, *rest, **kwargs)

    os.fork = fork
    os.posix_spawn = posix_spawn
    subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
