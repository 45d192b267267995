"""A scripted reviewer clears the demo's 1,000-name backlog in the admin (Chromium, Playwright):
bulk merge into the top suggestion, the keyboard, the merge search, and "approve all of this
source with no suggestion". Afterwards the catalog equals the backlog's truth, ids consecutive."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from recordhound.demo.backlog import BACKLOG_NAMES, RELEASES_FOR_BACKLOG
from recordhound.demo.catalog import Catalog
from tests.integration.admin_server import admin_server, logged_in
from tests.integration.review_env import ReviewEnv, review_env
from tests.integration.scripted_reviewer import catalog_vs_truth, clear, log_in, park_backlog, wait_applied
from tests.integration.test_admin_browser import page  # noqa: F401 - the fixture

SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env("embedded", tmp_path) as opened:
        yield opened


def test_a_scripted_reviewer_clears_the_backlog_and_the_catalog_equals_the_truth(
        env: ReviewEnv, tmp_path: Path, page: Page) -> None:
    backlog = park_backlog(env, Catalog(RELEASES_FOR_BACKLOG), extra_new=(("artist", SCRIPT),))
    assert len(env.queue.entries()) == BACKLOG_NAMES + 1
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    with admin_server(env, tmp_path, apply=True) as base:
        log_in(page, base)
        assert 1 in _waiting(page, f"{base}/admin/review")  # oldest first: one and two items waiting
        assert set(_waiting(page, f"{base}/admin/review?sort=waiting")) == {2}  # the 200 names two items wait on
        started = time.monotonic()
        used = clear(page, base, env, backlog)
        seconds = time.monotonic() - started
        wait_applied(env)
        page.goto(f"{base}/admin/review")
        expect(page.locator("table#pending")).to_contain_text("Nothing waits for a decision.")
    print(f"scripted reviewer: {BACKLOG_NAMES + 1} names in {seconds:.0f} s "
          f"({(BACKLOG_NAMES + 1) / seconds * 60:,.0f} decisions/min): {dict(used)}")
    assert sum(used.values()) == BACKLOG_NAMES + 1
    assert used["bulk merge into the top suggestion"] > 600 and used["keyboard approve (a)"] >= 1
    assert used["keyboard merge (m)"] >= 1 and used["merge search"] >= 1
    found, expected = catalog_vs_truth(env, backlog)
    assert found == expected
    assert dialogs == []  # the hostile name was shown as text, never run
    for kind in ("artist", "label"):
        with env.engine.connect() as conn:
            from sqlalchemy import text

            ids = [i for (i,) in conn.execute(text(f"SELECT id FROM {kind}s ORDER BY id"))]
        assert ids == list(range(1, len(ids) + 1))


def _waiting(page: Page, url: str) -> list[int]:
    page.goto(url)
    return [int(w) for w in page.locator("table#pending tr[data-entry]").evaluate_all(
        "rows => rows.map(row => row.dataset.waiting)")]


def test_bulk_actions_need_the_csrf_token_and_say_what_they_left(env: ReviewEnv, tmp_path: Path) -> None:
    from tests.integration.test_review_queue import release

    source = env.source()
    punk = env.seed("artist", "Daft Punk")["Daft Punk"]
    env.writer().write(source, [release("v", ["Daft Pnuk"]), release("n", ["Brand New Name"])])
    ids = {e["name"]: e["id"] for e in env.queue.entries()}
    with admin_server(env, tmp_path) as base:
        session, csrf = logged_in(base)
        selected = {"selected": [ids["Daft Pnuk"], ids["Brand New Name"]], "action": "merge-top"}
        for forged in ({}, {"csrf_token": "forged"}):
            refused = session.post(f"{base}/admin/review/bulk", data={**selected, **forged})
            assert refused.status_code == 403
            refused = session.post(f"{base}/admin/review/approve-unsuggested", data={"source": "demo", **forged})
            assert refused.status_code == 403
        assert env.queue.jobs("approved") == []
        merged = session.post(f"{base}/admin/review/bulk", data={**selected, "csrf_token": csrf})
        assert "merge into the top suggestion: 1 decided" in merged.text
        assert f"no suggestion, left as they are: #{ids['Brand New Name']}" in merged.text
        assert [(j["action"], j["into"]) for j in env.queue.jobs("approved")] == [("merge", punk)]
        approved = session.post(f"{base}/admin/review/approve-unsuggested",
                                data={"source": "demo", "type": "artist", "csrf_token": csrf})
        assert "approve: 1 names of demo with no suggestion" in approved.text
        assert [j["name"] for j in env.queue.jobs("approved")] == ["Daft Pnuk", "Brand New Name"]
