"""Login for every admin page: sqladmin's authentication backend over ``admin_users``.

A session is a signed cookie holding the user id and the user's session epoch; it is valid only
while the epoch is the user's current one, so logout and a password change end every session of
the user at once (server-side revocation). Logout is a CSRF-checked POST; ``GET /admin/logout``
shows the button. Wrong passwords are throttled per user name and per address (429).
"""

from __future__ import annotations

import math
from html import escape

from sqladmin.authentication import AuthenticationBackend
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from recordhound.admin.csrf import CSRFMiddleware, csrf_token, rotate
from recordhound.admin.throttle import LoginThrottle
from recordhound.admin.users import check_login, end_sessions, session_epoch

SESSION_MAX_AGE = 8 * 3600  # seconds: a working day


class AdminAuth(AuthenticationBackend):
    def __init__(self, engine: Engine, secret_key: str, https_only: bool = False) -> None:
        # session cookie: signed, HttpOnly (always, Starlette), SameSite=Lax, 8 h
        super().__init__(secret_key, max_age=SESSION_MAX_AGE, same_site="lax", https_only=https_only,
                         session_cookie="recordhound_admin")
        self.middlewares.append(Middleware(CSRFMiddleware))  # inside the session: it reads the token
        self.engine = engine
        self.throttle = LoginThrottle()

    async def login(self, request: Request) -> bool | Response:  # sqladmin returns a Response as is
        form = await request.form()
        name, password = str(form.get("username", "")), str(form.get("password", ""))
        keys = [f"user:{name.strip().casefold()}", f"address:{request.client.host if request.client else '-'}"]
        wait = self.throttle.wait(keys)
        if wait > 0:
            seconds = math.ceil(wait)
            return PlainTextResponse(f"Too many wrong passwords: try again in {seconds} s.", status_code=429,
                                     headers={"Retry-After": str(seconds)})
        found = await run_in_threadpool(check_login, self.engine, name, password)
        if found is None:
            self.throttle.failed(keys)
            return False
        self.throttle.succeeded(keys)
        request.session.clear()
        request.session.update({"user_id": found[0], "user": name, "epoch": found[1]})
        rotate(request)
        return True

    async def logout(self, request: Request) -> Response:
        """``GET /admin/logout``: a page with the (CSRF-protected) logout button; never logs out itself."""
        action = escape(str(request.url_for("admin:logout-post")))
        return HTMLResponse(
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Log out · recordhound</title>'
            '</head><body><form method="POST" action="' + action + '">'
            f'<input type="hidden" name="csrf_token" value="{escape(csrf_token(request))}">'
            '<button type="submit" id="logout">Log out of every session</button></form></body></html>')

    async def logout_post(self, request: Request) -> Response:
        user_id = request.session.get("user_id")
        if user_id:
            await run_in_threadpool(end_sessions, self.engine, int(user_id))
        request.session.clear()
        return RedirectResponse(request.url_for("admin:login"), status_code=303)

    async def authenticate(self, request: Request) -> bool:
        user_id, epoch = request.session.get("user_id"), request.session.get("epoch")
        if not user_id or epoch is None:
            return False
        current = await run_in_threadpool(session_epoch, self.engine, int(user_id))
        if current != epoch:
            request.session.clear()
            return False
        return True
