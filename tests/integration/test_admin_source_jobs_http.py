"""The Sources and jobs page over HTTP: every form needs its CSRF token (an upload too), a job's
error text from a shop or file is shown escaped, buttons move a job, a bad schedule is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recordhound.jobs import states, store
from tests.integration.admin_server import admin_server, logged_in
from tests.integration.review_env import ReviewEnv, review_env

SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[ReviewEnv]:
    with review_env("embedded", tmp_path) as opened:
        yield opened


def test_forms_need_their_token_errors_are_escaped_and_buttons_move_jobs(env: ReviewEnv, tmp_path: Path) -> None:
    job = store.create(env.engine, "shop", "html", "http://shop/", {"type": states.CRAWL, "profile": "demo"})
    store.claim(env.engine, "h:1", 30, lambda _: True)
    store.update_job(env.engine, job.id, {"status": states.FAILED, "last_error": SCRIPT})
    extra = {"RECORDHOUND_PROFILES_DIRS": [str(tmp_path / "profiles")], "RECORDHOUND_UPLOADS_DIR": str(tmp_path / "up")}
    with admin_server(env, tmp_path, **extra) as base:
        session, token = logged_in(base)
        page = session.get(f"{base}/admin/source-jobs")
        assert SCRIPT not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        upload = {"file": ("x.csv", b"sku,title,artists\n1,a,b\n", "text/csv")}
        fields = {"name": "x", "mapping": "external_id: sku\ntitle: title\nartists: artists\n"}
        refused = session.post(f"{base}/admin/source-jobs/file", files=upload, data=fields)
        assert refused.status_code == 403  # no token in the multipart form
        assert session.post(f"{base}/admin/source-jobs/action", data={"job_id": job.id, "action": "resume"}
                            ).status_code == 403
        moved = session.post(f"{base}/admin/source-jobs/action",
                             data={"job_id": job.id, "action": "resume", "csrf_token": token})
        assert moved.status_code == 200 and store.get(env.engine, job.id).status == states.QUEUED
        bad = session.post(f"{base}/admin/source-jobs/file", files=upload,
                           data={**fields, "every_hours": "-1", "csrf_token": token})
        assert "expected a number above 0" in bad.text
        done = session.post(f"{base}/admin/source-jobs/file", files=upload,
                            data={**fields, "every_hours": "24", "csrf_token": token})
        assert 'id="done"' in done.text, done.text[done.text.find('id="error"'):][:300]
        [imported] = [j for j in store.all_jobs(env.engine) if j.source == "x"]
        assert imported.doc["schedule"]["every_hours"] == 24 and Path(imported.doc["file"]).read_bytes().startswith(b"sku")
