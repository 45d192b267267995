"""``children.sigint_ignored_by_children``: a child started inside it ignores a terminal's Ctrl-C; a
Ctrl-C that reaches this process meanwhile is not lost, whether or not another thread is there to take it
(before, it was ignored here too)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import os, signal, subprocess, sys, threading, time
    from recordhound.children import sigint_ignored_by_children

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's process has it (not a `cmd &`)
    if sys.argv[1] == "thread":  # another thread is there to take the signal (a crawl's watcher, a pool's)
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
    try:
        with sigint_ignored_by_children():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
            os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C while the child starts
            time.sleep(0.2)  # with another thread, the Ctrl-C may stop this process here already
        time.sleep(0.2)
        print("not stopped", flush=True)
    except KeyboardInterrupt:
        print("stopped", flush=True)
    os.kill(child.pid, signal.SIGINT)  # the child ignores it
    time.sleep(0.5)
    print("child running" if child.poll() is None else f"child ended {child.returncode}", flush=True)
    child.kill()
    child.wait()
""")


@pytest.mark.parametrize("threads", ["alone", "thread"])
def test_a_ctrl_c_while_a_child_starts_reaches_this_process_and_not_the_child(threads: str) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, threads], capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n") == ["stopped", "child running", ""], (done.stdout, done.stderr)
