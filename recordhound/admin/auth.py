"""Login for every admin page: sqladmin's authentication backend over ``admin_users``."""

from __future__ import annotations

from sqladmin.authentication import AuthenticationBackend
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request

from recordhound.admin.csrf import CSRFMiddleware, rotate
from recordhound.admin.users import check_login

SESSION_MAX_AGE = 8 * 3600  # seconds: a working day


class AdminAuth(AuthenticationBackend):
    def __init__(self, engine: Engine, secret_key: str, https_only: bool = False) -> None:
        # session cookie: signed, HttpOnly (always, Starlette), SameSite=Lax, 8 h
        super().__init__(secret_key, max_age=SESSION_MAX_AGE, same_site="lax", https_only=https_only,
                         session_cookie="recordhound_admin")
        self.middlewares.append(Middleware(CSRFMiddleware))  # inside the session: it reads the token
        self.engine = engine

    async def login(self, request: Request) -> bool:
        form = await request.form()
        name, password = str(form.get("username", "")), str(form.get("password", ""))
        user_id = await run_in_threadpool(check_login, self.engine, name, password)
        if user_id is None:
            return False
        request.session.update({"user_id": user_id, "user": name})
        rotate(request)
        return True

    async def logout(self, request: Request) -> bool:
        request.session.clear()
        return True

    async def authenticate(self, request: Request) -> bool:
        return bool(request.session.get("user_id"))
