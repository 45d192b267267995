"""A real scrapyd for tests and for recording cassettes: free port, temp folders, basic auth."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests

from tests.ports import free_port, listens

USERNAME, PASSWORD = "recordhound", "test-secret"
PROJECT_ROOT = Path(__file__).resolve().parents[1]


class ScrapydServer:
    STARTS = 5  # a free port taken by someone else before scrapyd listens: a new port, again

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port, self.url = 0, ""
        self.process: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def start(self) -> ScrapydServer:
        for _ in range(self.STARTS):
            if self._started():
                return self
        raise AssertionError("scrapyd did not start: " + (self.folder / "scrapyd.log").read_text()[-2000:])

    def _started(self) -> bool:
        """Start scrapyd on a free port and wait until it answers; False when it exits first."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = (PROJECT_ROOT / "scrapyd" / "scrapyd.conf").read_text()
        config = config.replace("http_port         = 6800", f"http_port         = {self.port}")
        config = re.sub(r"(?m)^password\s*=.*$", f"password          = {PASSWORD}", config)
        (self.folder / "scrapyd.conf").write_text(config)
        scrapyd = shutil.which("scrapyd", path=str(Path(sys.executable).parent)) or "scrapyd"
        if self._log is not None:
            self._log.close()
        self._log = open(self.folder / "scrapyd.log", "a")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen([scrapyd], cwd=self.folder, stdout=subprocess.DEVNULL, stderr=self._log,
                                        start_new_session=True)  # its crawls in its group: stopped with it
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.process.poll() is None:
            if listens(self.process.pid, self.port):  # ours, not a server that took the port first
                try:
                    requests.get(f"{self.url}/daemonstatus.json", timeout=1, auth=(USERNAME, PASSWORD))
                    return True
                except requests.RequestException:  # refused, or slow to answer on a loaded machine
                    pass
            time.sleep(0.1)
        self.stop()
        return False

    def upload_egg(self, version: str) -> None:
        egg = self.folder / "recordhound.egg"
        subprocess.run([str(Path(sys.executable).parent / "scrapyd-deploy"), f"--build-egg={egg}"],
                       cwd=PROJECT_ROOT, check=True, capture_output=True)
        with open(egg, "rb") as data:
            answer = requests.post(f"{self.url}/addversion.json", auth=(USERNAME, PASSWORD), timeout=60,
                                   data={"project": "recordhound", "version": version}, files={"egg": data})
        assert answer.json()["status"] == "ok", answer.text

    def stop(self) -> None:
        """scrapyd, then every crawl it left running (a test that failed while one ran: scrapyd's end does
        not end its crawls, which would crawl on, or wait for a store the test removed, for good)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        if self._log is not None:
            self._log.close()
