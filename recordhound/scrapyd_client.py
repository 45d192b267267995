"""Talk to scrapyd's HTTP API: schedule a crawl on N nodes, list jobs, cancel one.

Targets come from scrapy.cfg (``[deploy:NAME] url = ..., project = ...``). Credentials come from
$SCRAPYD_USERNAME / $SCRAPYD_PASSWORD, the target's ``username``/``password``, or ~/.netrc
(as scrapyd-deploy reads them), and never from the command line.
"""

from __future__ import annotations

import configparser
import netrc
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import requests

from recordhound.exceptions import RecordhoundError

TIMEOUT_SECONDS = 30


class ScrapydError(RecordhoundError):
    """scrapyd refused or could not be reached; the message says which and what to do."""


@dataclass(frozen=True)
class Target:
    name: str
    url: str
    project: str
    username: str = ""
    password: str = ""

    @classmethod
    def from_config(cls, name: str = "local", path: str = "scrapy.cfg") -> Target:
        parser = configparser.ConfigParser()
        if not parser.read(path):
            raise ScrapydError(f"no {path} here: run from the recordhound project folder")
        section = f"deploy:{name}"
        if not parser.has_section(section):
            targets = [s[7:] for s in parser.sections() if s.startswith("deploy:")]
            raise ScrapydError(f"no target {name!r} in {path}; targets: {targets}")
        get = parser[section].get
        url = (get("url") or "").rstrip("/")
        user, password = _netrc(url)
        return cls(name, url, get("project") or "recordhound",
                   os.environ.get("SCRAPYD_USERNAME") or get("username") or user,
                   os.environ.get("SCRAPYD_PASSWORD") or get("password") or password)


def _netrc(url: str) -> tuple[str, str]:
    """~/.netrc's login for the target's host (as scrapyd-deploy reads it), if any."""
    try:
        found = netrc.netrc().authenticators(urlparse(url).hostname or "")
    except (OSError, netrc.NetrcParseError):
        return "", ""
    return (found[0] or "", found[2] or "") if found else ("", "")


class ScrapydClient:
    def __init__(self, target: Target, session: requests.Session | None = None) -> None:
        self.target = target
        self.session = session or requests.Session()
        if target.username:
            self.session.auth = (target.username, target.password)

    def _call(self, method: str, endpoint: str, **data: Any) -> dict[str, Any]:
        url = f"{self.target.url}/{endpoint}"
        try:
            if method == "POST":
                response = self.session.request(method, url, timeout=TIMEOUT_SECONDS, data=data)
            else:
                response = self.session.request(method, url, timeout=TIMEOUT_SECONDS, params=data)
        except requests.ConnectionError as exc:
            raise ScrapydError(f"cannot reach scrapyd at {self.target.url} (target {self.target.name!r}): "
                               f"is it running? {type(exc).__name__}") from exc
        if response.status_code == 401:
            raise ScrapydError(f"scrapyd at {self.target.url} refused the credentials (401): set "
                               f"SCRAPYD_USERNAME / SCRAPYD_PASSWORD or username/password in [deploy:"
                               f"{self.target.name}]")
        try:
            body: dict[str, Any] = response.json()
        except ValueError as exc:
            raise ScrapydError(f"scrapyd at {url} answered HTTP {response.status_code}, not JSON") from exc
        if body.get("status") != "ok":
            raise ScrapydError(f"scrapyd refused {endpoint}: {body.get('message', body)}")
        return body

    def schedule(self, spider: str, nodes: int, settings: dict[str, str], args: dict[str, str],
                 job_ids: list[str] | None = None) -> list[str]:
        """Schedule the same crawl ``nodes`` times (they share one frontier); returns job ids."""
        form = {**args, "project": self.target.project, "spider": spider}
        setting_pairs = [f"{k}={v}" for k, v in settings.items()]
        jobs = []
        for n in range(nodes):
            extra = {"jobid": job_ids[n]} if job_ids else {}
            body = self._call("POST", "schedule.json", **form, **extra, setting=setting_pairs)
            jobs.append(str(body["jobid"]))
        return jobs

    def spiders(self) -> list[str]:
        """The deployed project's spiders (a project scrapyd does not have is a ScrapydError)."""
        body = self._call("GET", "listspiders.json", project=self.target.project)
        return [str(name) for name in body.get("spiders", [])]

    def check_deployed(self, spider: str) -> None:
        found = self.spiders()
        if spider not in found:
            raise ScrapydError(f"project {self.target.project!r} on {self.target.url} has no spider {spider!r} "
                               f"(it has {found}); deploy it: scrapyd-deploy {self.target.name}")

    def jobs(self) -> dict[str, list[dict[str, Any]]]:
        body = self._call("GET", "listjobs.json", project=self.target.project)
        return {state: body.get(state, []) for state in ("pending", "running", "finished")}

    def cancel(self, job: str) -> str:
        """Stop a job with SIGTERM (scrapyd's default is SIGINT): the crawl finishes what it has
        leased and returns the rest. Returns the state it was in."""
        body = self._call("POST", "cancel.json", project=self.target.project, job=job, signal="TERM")
        if body.get("prevstate") is None:
            raise ScrapydError(f"no pending or running job {job!r} in project {self.target.project!r} on "
                               f"{self.target.url} (see `recordhound jobs`)")
        return str(body["prevstate"])

    def log_head(self, job: dict[str, Any], spider: str = "catalog", size: int = 64 * 1024) -> str:
        """The start of a job's log ("" when scrapyd does not serve it)."""
        url = f"{self.target.url}/logs/{self.target.project}/{job.get('spider') or spider}/{job.get('id')}.log"
        try:
            response = self.session.get(url, timeout=TIMEOUT_SECONDS, headers={"Range": f"bytes=0-{size - 1}"})
        except requests.RequestException:
            return ""
        return response.text if response.status_code in (200, 206) else ""


SOURCE_LOG = re.compile(r"recordhound: crawling source (\S+)")  # the catalog spider's first line


def job_source(job: dict[str, Any], log: Callable[[dict[str, Any]], str] | None = None) -> str:
    """The source a job crawls: its ``source`` argument (pending jobs), the job id's prefix
    (`recordhound schedule` names jobs SOURCE--CRAWL-N), else what its log says (jobs that any
    other client scheduled)."""
    args = job.get("args") or {}
    source = args.get("source") if isinstance(args, dict) else None
    job_id = str(job.get("id", ""))
    if source:
        return str(source)
    if "--" in job_id:
        return job_id.split("--", 1)[0]
    found = SOURCE_LOG.search(log(job)) if log is not None else None
    return found.group(1) if found else "?"
