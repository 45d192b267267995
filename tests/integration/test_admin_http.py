"""The web admin over HTTP: login, CSRF, each decision, pagination, search, escaping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from recordhound.review.queue import ENTRIES
from tests.integration.admin_server import PASSWORD, USER, admin_server, logged_in, token
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.test_review_queue import offer_skus, release, rows

SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env("embedded", tmp_path) as opened:
        yield opened


@pytest.fixture
def base(env: ReviewEnv, tmp_path: Path) -> Iterator[str]:
    with admin_server(env, tmp_path) as url:
        yield url


def entry_id(env: ReviewEnv, name: str) -> int:
    return next(e["id"] for e in env.queue.entries() if e.get("name") == name)


def test_every_page_needs_a_login_and_the_session_cookie_is_httponly(env: ReviewEnv, base: str) -> None:
    anonymous = requests.Session()
    for path in ("/admin/", "/admin/release/list", "/admin/review", "/admin/prices", "/admin/jobs/failed",
                 "/admin/status", "/admin/artist/details/1"):
        response = anonymous.get(base + path, allow_redirects=False)
        assert response.status_code == 302 and response.headers["location"].endswith("/admin/login"), path
    login = anonymous.get(f"{base}/admin/login")
    wrong = anonymous.post(f"{base}/admin/login", data={"username": USER, "password": "nope nope",
                                                        "csrf_token": token(login.text)})
    assert wrong.status_code == 400 and "Invalid credentials" in wrong.text
    right = anonymous.post(f"{base}/admin/login", data={"username": USER, "password": PASSWORD,
                                                        "csrf_token": token(login.text)}, allow_redirects=False)
    assert right.status_code == 302
    cookie = right.headers["set-cookie"].lower()
    assert "recordhound_admin=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
    assert anonymous.get(f"{base}/admin/release/list").status_code == 200
    page = anonymous.get(f"{base}/admin/logout")  # the logout button: logging out is a POST
    anonymous.post(f"{base}/admin/logout", data={"csrf_token": token(page.text)})
    assert anonymous.get(f"{base}/admin/release/list", allow_redirects=False).status_code == 302


def test_state_changing_posts_without_the_right_csrf_token_are_rejected(env: ReviewEnv, base: str) -> None:
    env.writer().write(env.source(), [release("x1", ["Forged"])])
    target = entry_id(env, "Forged")
    session, good = logged_in(base)
    other, other_token = logged_in(base)  # a valid token, of another session
    for data in ({}, {"csrf_token": "forged"}, {"csrf_token": other_token}):
        response = session.post(f"{base}/admin/review/decide", data={"entry_id": target, "action": "approve", **data})
        assert response.status_code == 403 and "CSRF" in response.text
    login_page = requests.get(f"{base}/admin/login")
    assert requests.post(f"{base}/admin/login", data={"username": USER, "password": PASSWORD},
                         cookies=login_page.cookies).status_code == 403
    assert env.queue.jobs("approved") == []  # nothing was decided
    done = session.post(f"{base}/admin/review/decide", data={"entry_id": target, "action": "approve",
                                                              "csrf_token": good})
    assert done.status_code == 200 and "job" in done.text
    assert [j["action"] for j in env.queue.jobs("approved")] == ["approve"]


def test_each_decision_from_the_pending_review_tab(env: ReviewEnv, base: str) -> None:
    source = env.source()
    punk = env.seed("artist", "Daft Punk")["Daft Punk"]
    env.writer().write(source, [release("a", ["Approve Me"]), release("m", ["Daft Pnuk"]),
                                release("s", ["Known", "Skip Me"]), release("e", ["Edit Mee"])])
    env.seed("artist", "Known")
    session, csrf = logged_in(base)
    page = session.get(f"{base}/admin/review").text
    assert all(name in page for name in ("Approve Me", "Daft Pnuk", "Skip Me", "Edit Mee"))
    assert f'value="{punk}"' in page  # Daft Punk is offered as a merge

    def post(path: str, **data: object) -> requests.Response:
        response = session.post(f"{base}{path}", data={**data, "csrf_token": csrf})
        assert response.status_code == 200 and 'id="error"' not in response.text, response.text[-2000:]
        return response

    post("/admin/review/decide", entry_id=entry_id(env, "Approve Me"), action="approve")
    post("/admin/review/decide", entry_id=entry_id(env, "Daft Pnuk"), action="merge", into=punk)
    post("/admin/review/decide", entry_id=entry_id(env, "Skip Me"), action="skip")
    edit_form = session.get(f"{base}/admin/review/{entry_id(env, 'Edit Mee')}/edit").text
    assert 'value="Edit Mee"' in edit_form
    post("/admin/review/decide", entry_id=entry_id(env, "Edit Mee"), action="edit", name="Edit Me")
    assert sorted(j["action"] for j in env.queue.jobs("approved")) == ["approve", "edit", "merge", "skip"]
    assert env.worker().run()["completed"] == 4
    assert sorted(n for (n,) in rows(env, "SELECT name FROM artists")) == ["Approve Me", "Daft Punk", "Edit Me", "Known"]
    assert offer_skus(env) == {"a", "m", "s", "e"}
    completed = session.get(f"{base}/admin/jobs/completed").text
    assert completed.count('data-job="') == 4


def test_bulk_approve_and_price_decisions_and_failed_retry(env: ReviewEnv, base: str) -> None:
    source = env.source()
    env.writer().write(source, [release("b1", ["Bulk One"]), release("b2", ["Bulk Two"])])
    trusted = env.writer(trusted=True)
    trusted.write(source, [release("p1", ["Priced"], price="10.00"), release("p2", ["Priced"], price="10.00")])
    trusted.write(source, [release("p1", ["Priced"], price="20.00"), release("p2", ["Priced"], price="30.00")])
    session, csrf = logged_in(base)
    ids = [entry_id(env, "Bulk One"), entry_id(env, "Bulk Two")]
    session.post(f"{base}/admin/review/bulk", data={"selected": ids, "action": "approve", "csrf_token": csrf})
    prices = session.get(f"{base}/admin/prices").text
    assert "100.00 %" in prices and "200.00 %" in prices
    held = {e["external_id"]: e["id"] for e in env.queue.entries(kind="price")}
    session.post(f"{base}/admin/prices/decide", data={"entry_id": held["p1"], "action": "approve", "csrf_token": csrf})
    session.post(f"{base}/admin/prices/decide", data={"entry_id": held["p2"], "action": "reject", "csrf_token": csrf})
    assert env.worker().run()["completed"] == 4
    assert offer_skus(env) >= {"b1", "b2"}
    assert {sku: float(p) for sku, p in rows(env, "SELECT external_id, price FROM offers WHERE external_id LIKE 'p%'")} == {
        "p1": 20.0, "p2": 10.0}

    env.writer().write(source, [release("f1", ["Broken Merge"])])
    env.queue.decide(entry_id(env, "Broken Merge"), "merge", into=9999)
    assert env.worker().run()["failed"] == 1
    failed = session.get(f"{base}/admin/jobs/failed").text
    assert "no such artist" in failed and "Retry" in failed
    job_id = env.queue.jobs("failed")[0]["id"]
    session.post(f"{base}/admin/jobs/retry", data={"job_id": job_id, "csrf_token": csrf})
    assert [j["id"] for j in env.queue.jobs("approved")] == [job_id]


def test_pagination_and_search_in_catalog_and_review_tabs(env: ReviewEnv, base: str) -> None:
    source = env.source()
    env.seed("artist", *[f"Seeded Artist {n:02d}" for n in range(60)])
    env.writer().write(source, [release(f"u{n}", [f"Unknown Person {n:02d}"]) for n in range(60)])
    session, _ = logged_in(base)
    first = session.get(f"{base}/admin/artist/list?pageSize=25").text
    third = session.get(f"{base}/admin/artist/list?page=3&pageSize=25").text
    assert "Seeded Artist 00" in first and "Seeded Artist 59" not in first
    assert "Seeded Artist 59" in third and "Seeded Artist 00" not in third
    found = session.get(f"{base}/admin/artist/list?search=Artist 42").text
    assert "Seeded Artist 42" in found and "Seeded Artist 41" not in found
    review1 = session.get(f"{base}/admin/review").text
    review2 = session.get(f"{base}/admin/review?page=2").text
    assert review1.count('data-entry="') == 50 and review2.count('data-entry="') == 10
    assert "Page 2 of 2" in review2
    searched = session.get(f"{base}/admin/review?q=person 07").text
    assert searched.count('data-entry="') == 1 and "Unknown Person 07" in searched


def test_scraped_text_is_escaped_everywhere_it_is_shown(env: ReviewEnv, base: str) -> None:
    source = env.source()
    env.writer(trusted=True).write(source, [release("xss", ["Known Artist"], title=SCRIPT)])
    env.writer().write(source, [release("xss2", ['<img src=x onerror="alert(2)">'])])
    session, _ = logged_in(base)
    for path in ("/admin/release/list", "/admin/release/details/1", "/admin/review", "/admin/offer/details/1"):
        page = session.get(base + path).text
        assert SCRIPT not in page and "<img src=x" not in page, path
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in session.get(f"{base}/admin/release/list").text
    assert "&lt;img src=x" in session.get(f"{base}/admin/review").text
    stored = env.queue.store.run(lambda txn: txn.all(ENTRIES))
    assert any(e.get("name", "").startswith("<img") for e in stored.values())  # stored as it was, shown as text


def test_the_spellings_tab_lists_what_each_spelling_of_a_source_matched(env: ReviewEnv, base: str) -> None:
    source = env.source()
    beatles = env.seed("artist", "The Beatles")["The Beatles"]
    env.writer(trusted=True).write(source, [release("s1", ["Beatles, The"]), release("s2", [SCRIPT]),
                                            release("s3", ["Who? #1 100%"])])
    session, _ = logged_in(base)
    found = session.get(f"{base}/admin/source-spelling/list?search=beatles").text
    assert "Beatles, The" in found and f">{beatles}<" in found.replace(" ", "").replace("\n", "")
    assert "alert(1)" not in found  # the search narrowed the list
    listed = session.get(f"{base}/admin/source-spelling/list").text
    assert SCRIPT not in listed and "&lt;script&gt;alert(1)&lt;/script&gt;" in listed
    assert "Who? #1 100%" in listed and "/details/" not in listed  # no link a spelling could break


def test_crawl_status_shows_frontier_counts_rate_and_backlog(env: ReviewEnv, base: str, tmp_path: Path) -> None:
    from recordhound.demo.process import ShopProcess
    from tests.services import run_crawl

    with ShopProcess(30, seed=6) as shop:
        done = run_crawl(tmp_path, env.database_url, "-a", "source=demo", "-a", f"base_url={shop.url}",
                         "-s", f"RECORDHOUND_FRONTIER_DIR={tmp_path / 'frontier'}", *(
                             arg for pair in env.settings() for arg in ("-s", pair)), trusted=False)
    assert done.returncode == 0, done.stderr[-2000:]
    session, _ = logged_in(base)
    page = session.get(f"{base}/admin/status").text
    row = page.split('data-source="demo"')[1].split("</tr>")[0]
    cells = [c.split(">", 1)[1].split("<", 1)[0].strip() for c in row.split("<td")[1:]]
    pages = done.stats["response_received_count"]
    assert cells[1].startswith("completed")
    assert int(cells[2]) == 0 and int(cells[4]) + int(cells[5]) >= pages - 1  # queued, done + failed
    backlog = len([e for e in env.queue.entries() if e["kind"] != "price"])
    assert backlog > 0 and int(cells[7]) == backlog
    assert 'http-equiv="refresh"' in page
    assert f"{env.queue.counts()['parked']} items parked" in page
    failed = row.split('class="failed">')[1].split("</td>")[0]
    assert "http_404: 1" in failed and "redirect_loop: 1" in failed  # the shop's 404 and its redirect loop


def test_metrics_serve_the_counts_that_frontier_status_prints(env: ReviewEnv, base: str, tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from prometheus_client.parser import text_string_to_metric_families

    from recordhound.demo.process import ShopProcess
    from tests.services import run_crawl

    frontier = ("-s", f"RECORDHOUND_FRONTIER_DIR={tmp_path / 'frontier'}",
                *(arg for pair in env.settings() for arg in ("-s", pair)))
    with ShopProcess(30, seed=7) as shop:
        done = run_crawl(tmp_path, env.database_url, "-a", "source=demo", "-a", f"base_url={shop.url}", *frontier,
                         trusted=False)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = subprocess.run([sys.executable, "-m", "recordhound", "frontier", *frontier, "status", "--json"],
                             capture_output=True, text=True, cwd=tmp_path, timeout=60,
                             env={**os.environ, "DATABASE_URL": env.database_url})
    (status,) = [report for report in json.loads(printed.stdout) if report["crawl"] == "demo"]

    scraped = requests.get(f"{base}/metrics", timeout=30)  # no login: counts only
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(scraped.text) for s in family.samples}

    def value(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    assert value("recordhound_frontier_queued", crawl="demo") == status["queued"] == 0
    assert value("recordhound_frontier_done_total", crawl="demo") == status["done"] > 0
    assert value("recordhound_frontier_seen", crawl="demo") == status["seen"]
    failed = {dict(labels)["reason"]: v for (name, labels), v in samples.items()
              if name == "recordhound_frontier_failed" and dict(labels)["crawl"] == "demo"}
    assert failed == status["failed_by_reason"] == {"http_404": 1, "redirect_loop": 1}
    assert value("recordhound_review_backlog", queue="pending") == env.queue.counts()["pending"] > 0
    assert value("recordhound_items_total", source="demo", outcome="parked") == done.stats["recordhound/store/parked"]
    assert value("recordhound_source_failed", source="demo") == 0
