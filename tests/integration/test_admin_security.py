"""The admin exposed: host names, password guessing, sessions after logout, framing, hashes; and
decisions that take effect in seconds. A real uvicorn server on port 0, real HTTP requests."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from sqlalchemy import text

from recordhound.admin.users import set_password
from tests.integration.admin_server import PASSWORD, USER, admin_server, logged_in, token
from tests.integration.review_env import ReviewEnv
from tests.integration.test_admin_http import entry_id, env  # noqa: F401 - the fixture
from tests.integration.test_review_queue import offer_skus, release, rows


@pytest.fixture
def base(env: ReviewEnv, tmp_path: Path) -> Iterator[str]:  # noqa: F811 - uses the imported env fixture
    with admin_server(env, tmp_path, apply=True) as url:
        yield url


def _login(session: requests.Session, base: str, password: str) -> requests.Response:
    page = session.get(f"{base}/admin/login")
    return session.post(f"{base}/admin/login", data={"username": USER, "password": password,
                                                     "csrf_token": token(page.text)}, allow_redirects=False)


def test_a_foreign_host_header_is_refused_not_redirected_to(base: str) -> None:
    evil = requests.get(f"{base}/admin/review", headers={"Host": "evil.example"}, allow_redirects=False)
    assert evil.status_code == 400 and "evil.example" not in evil.headers.get("location", "")
    assert requests.get(f"{base}/admin/review", allow_redirects=False).headers["location"].endswith("/admin/login")


def test_every_response_carries_the_security_headers(base: str) -> None:
    for path in ("/admin/login", "/admin/review", "/recordhound.js"):
        headers = requests.get(base + path, allow_redirects=False).headers
        assert headers["X-Frame-Options"] == "DENY", path
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"] and "script-src 'self'" in (
            headers["Content-Security-Policy"])
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "same-origin"


def test_wrong_passwords_are_throttled_per_user_and_per_address(base: str) -> None:
    guesser = requests.Session()
    answers = [_login(guesser, base, f"wrong guess {n}").status_code for n in range(5)]
    assert answers == [400] * 5
    blocked = _login(guesser, base, "wrong guess 6")
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) >= 1
    assert _login(requests.Session(), base, PASSWORD).status_code == 429  # even the right one, for now
    time.sleep(int(blocked.headers["Retry-After"]) + 0.2)
    assert _login(requests.Session(), base, PASSWORD).status_code == 302  # the wait is over


def test_logout_is_a_csrf_checked_post_that_ends_every_session_of_the_user(env: ReviewEnv, base: str) -> None:
    first, _ = logged_in(base)
    second, _ = logged_in(base)
    stolen = requests.Session()
    stolen.cookies.update(first.cookies)  # a copy of the cookie, as an attacker would keep it
    assert stolen.get(f"{base}/admin/review", allow_redirects=False).status_code == 200

    first.get(f"{base}/admin/logout")  # a GET only shows the button
    assert first.get(f"{base}/admin/review", allow_redirects=False).status_code == 200
    assert first.post(f"{base}/admin/logout", data={}).status_code == 403  # no CSRF token: refused
    page = first.get(f"{base}/admin/logout")
    done = first.post(f"{base}/admin/logout", data={"csrf_token": token(page.text)}, allow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].endswith("/admin/login")
    for session in (first, second, stolen):  # revoked on the server: the old cookie is worthless
        assert session.get(f"{base}/admin/review", allow_redirects=False).status_code == 302

    third, _ = logged_in(base)
    set_password(env.engine, USER, "a brand new password")
    assert third.get(f"{base}/admin/review", allow_redirects=False).status_code == 302


def test_old_scrypt_hashes_are_replaced_by_argon2_at_login(env: ReviewEnv, base: str) -> None:
    salt = os.urandom(16)
    digest = hashlib.scrypt(PASSWORD.encode(), salt=salt, n=2**14, r=8, p=1)
    old = "$".join(["scrypt", str(2**14), "8", "1", base64.b64encode(salt).decode(), base64.b64encode(digest).decode()])
    with env.engine.begin() as conn:
        conn.execute(text("UPDATE admin_users SET password_hash = :h WHERE name = :n"), {"h": old, "n": USER})
    assert _login(requests.Session(), base, PASSWORD).status_code == 302
    (stored,), = rows(env, "SELECT password_hash FROM admin_users")
    assert stored.startswith("$argon2id$")
    assert _login(requests.Session(), base, PASSWORD).status_code == 302  # and the new hash verifies


def test_a_decision_reaches_the_catalog_in_seconds_and_leaves_the_list_at_once(env: ReviewEnv, base: str) -> None:
    source = env.source()
    env.seed("label", "Known Label")
    env.writer().write(source, [release("s1", ["Fresh Artist"]), release("s2", ["Other Fresh"]),
                                release("doomed", ["Only Artist"], label="Unknown Label")])
    session, csrf = logged_in(base)
    fresh, other = entry_id(env, "Fresh Artist"), entry_id(env, "Other Fresh")
    started = time.monotonic()
    listed = session.post(f"{base}/admin/review/bulk?type=artist&q=fresh", data={
        "selected": [fresh, other], "action": "approve", "csrf_token": csrf, "back": "type=artist&q=fresh"})
    assert listed.url.split("?", 1)[1].startswith("type=artist&q=fresh&done=")  # filter kept
    assert 'data-name="Fresh Artist"' not in listed.text  # decided: off the Pending list at once
    again = session.post(f"{base}/admin/review/bulk", data={"selected": [fresh], "action": "approve",
                                                             "csrf_token": csrf})
    assert "already decided: #%d" % fresh in again.text and 'id="error"' not in again.text
    while offer_skus(env) != {"s1", "s2"} and time.monotonic() - started < 10:
        time.sleep(0.2)
    assert offer_skus(env) == {"s1", "s2"}, "the admin's apply worker did not store the releases within 10 s"

    # skipping its only artist dooms an item at once, though its label is still undecided
    session.post(f"{base}/admin/review/decide", data={"entry_id": entry_id(env, "Only Artist"), "action": "skip",
                                                     "csrf_token": csrf})
    while not env.queue.rejected() and time.monotonic() - started < 20:
        time.sleep(0.2)
    assert [r["key"] for r in env.queue.rejected()] == [f"{source}:doomed"]
    assert next(e for e in env.queue.entries() if e["name"] == "Unknown Label")["waiting"] == 0


def test_a_merge_into_a_missing_entity_is_refused_when_decided(env: ReviewEnv, base: str) -> None:
    env.writer().write(env.source(), [release("m1", ["Merge Me"])])
    session, csrf = logged_in(base)
    refused = session.post(f"{base}/admin/review/decide", data={
        "entry_id": entry_id(env, "Merge Me"), "action": "merge", "into": "99999", "csrf_token": csrf})
    assert "cannot merge entry" in refused.text and "there is no artist with id 99999" in refused.text
    assert env.queue.jobs("approved") == [] and env.queue.jobs("failed") == []
