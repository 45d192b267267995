"""``children.sigint_ignored_by_children``: a child started inside it ignores a terminal's Ctrl-C; a
Ctrl-C that reaches this process meanwhile is not lost (before, it was ignored too)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from recordhound.children import sigint_ignored_by_children

    try:
        with sigint_ignored_by_children():
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
            os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C while the child starts
            time.sleep(0.2)
            print("inside", flush=True)
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


def test_a_ctrl_c_while_a_child_starts_reaches_this_process_after_and_not_the_child() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.stdout.split("\n")[:3] == ["inside", "stopped", "child running"], (done.stdout, done.stderr)
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN  # this process: untouched
