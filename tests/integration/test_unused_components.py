"""Scrapy's cookies middleware and remote-control extension, off on a node, are not imported; turned
on by a setting they work as in any Scrapy project (extensions/unused.py). Real crawls, real servers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from recordhound.demo.process import ShopProcess
from tests.integration.crawlers import CrawlSetup, crawl_env

OFF_AND_UNIMPORTED = ("aiohttp", "tldextract", "scrapy.extensions.remote_control",
                      "scrapy.downloadermiddlewares.cookies")
# a plain spider on the node's settings, without the catalog's frontier and pipelines (they need a
# profile): what it sees of a cookie and of the remote-control job file is written to `out`
CHECK_SPIDER = '''import json
from pathlib import Path

import scrapy


class SettingsCheck(scrapy.Spider):
    name = "settings_check"
    custom_settings = {"SCHEDULER": "scrapy.core.scheduler.Scheduler",
                       "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
                       "SPIDER_MIDDLEWARES": {}, "ITEM_PIPELINES": {}, "EXTENSIONS": {}, "ROBOTSTXT_OBEY": False}

    async def start(self):
        yield scrapy.Request(self.base + "set", callback=self.then_check)

    def then_check(self, response):
        yield response.follow("/check", callback=self.done)

    def done(self, response):
        jobs = [json.loads(p.read_text()) for p in Path(self.jobs).glob("*.json")]
        Path(self.out).write_text(json.dumps({"cookie": response.text, "jobs": jobs}))
'''


class CookieHandler(BaseHTTPRequestHandler):
    """``/set`` sets a cookie; every page answers with the Cookie header it was sent ("none")."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = (self.headers.get("Cookie") or "none").encode()
        self.send_response(200)
        if self.path == "/set":
            self.send_header("Set-Cookie", "region=eu; Path=/")
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        return


@pytest.fixture
def cookie_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CookieHandler)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_node_does_not_import_the_components_its_settings_turn_off(tmp_path: Path) -> None:
    with ShopProcess(releases=40) as shop:
        setup = CrawlSetup(tmp_path, shop.url, f"sqlite:///{tmp_path / 'product.sqlite3'}")
        crawler = setup.start("RECORDHOUND_STORE_ENABLED=false", "CLOSESPIDER_PAGECOUNT=20",
                              program=(sys.executable, "-X", "importtime", "-m", "scrapy"))
        assert crawler.wait(180) == 0, setup.log("crawl")[-3000:]
        assert crawler.stats()["response_received_count"] >= 20
    imported = {line.rsplit("|", 1)[1].strip() for line in setup.log("crawl").splitlines()
                if line.startswith("import time:")}
    assert "scrapy.core.engine" in imported  # the log holds the import lines
    assert [name for name in OFF_AND_UNIMPORTED if name in imported] == []


COOKIES = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"


@pytest.mark.parametrize(("enabled", "project"), [(False, None), (True, None), (True, "off"), (True, "moved")])
def test_cookies_and_remote_control_work_when_a_setting_turns_them_on(tmp_path: Path, cookie_server: str,
                                                                       enabled: bool, project: str | None) -> None:
    """``project``: the project names Scrapy's components itself, as Scrapy's docs say to turn one
    off (``None``) or move it (an order): Scrapy's entry is then the one that counts, once."""
    spider = tmp_path / "settings_check.py"
    spider.write_text(CHECK_SPIDER)
    out, jobs = tmp_path / "out.json", tmp_path / "jobs"
    jobs.mkdir()
    on = "true" if enabled else "false"
    order = {None: None, "off": None, "moved": 650}[project]
    entries = [] if project is None else ["-s", f"DOWNLOADER_MIDDLEWARES={json.dumps({COOKIES: order})}",
                                          "-s", f"EXTENSIONS={json.dumps({REMOTE_CONTROL: order})}"]
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a", f"base={cookie_server}",
         "-a", f"out={out}", "-a", f"jobs={jobs}", "-s", f"COOKIES_ENABLED={on}", *entries,
         "-s", f"REMOTE_CONTROL_ENABLED={on}", "-s", f"REMOTE_CONTROL_JOBS_DIR={jobs}", "-s", "LOG_LEVEL=INFO"],
        cwd=tmp_path, env=crawl_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(out.read_text())
    working = enabled and project != "off"
    assert seen["cookie"] == ("region=eu" if working else "none")
    assert [job["spider"] for job in seen["jobs"]] == (["settings_check"] if working else [])
    assert list(jobs.iterdir()) == []  # the job file goes when the crawl ends
    listed = done.stderr.split("Enabled downloader middlewares:", 1)[1].split("Enabled spider middlewares:", 1)[0]
    assert listed.count("CookiesMiddleware") + listed.count("unused.Cookies") == (1 if working else 0), listed
