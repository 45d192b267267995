"""Admin logins: names and scrypt password hashes in the product database's ``admin_users``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from datetime import UTC, datetime

from sqlalchemy import Engine, insert, select

from recordhound.db.models import AdminUser
from recordhound.exceptions import RecordhoundError

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MIN_PASSWORD = 8


class AdminUserError(RecordhoundError):
    """A user that cannot be created (name taken, password too short)."""


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return "$".join(["scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P),
                     base64.b64encode(salt).decode(), base64.b64encode(digest).decode()])


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    got = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p))
    return hmac.compare_digest(got, base64.b64decode(digest))


def create_user(engine: Engine, name: str, password: str) -> int:
    name = name.strip()
    if not name or len(name) > 100:
        raise AdminUserError(f"a user name has 1 to 100 characters, got {len(name)}")
    if len(password) < MIN_PASSWORD:
        raise AdminUserError(f"the password needs at least {MIN_PASSWORD} characters")
    with engine.begin() as conn:
        if conn.execute(select(AdminUser.id).where(AdminUser.name == name)).scalar() is not None:
            raise AdminUserError(f"user {name!r} exists already")
        return int(conn.execute(insert(AdminUser).values(
            name=name, password_hash=hash_password(password), created_at=datetime.now(UTC)
        ).returning(AdminUser.id)).scalar_one())


def check_login(engine: Engine, name: str, password: str) -> int | None:
    """The user's id when the password is right, else None (same work either way)."""
    with engine.connect() as conn:
        row = conn.execute(select(AdminUser.id, AdminUser.password_hash).where(AdminUser.name == name)).first()
    if row is None:
        verify_password(password, _DUMMY)  # no timing difference between "no user" and "wrong password"
        return None
    return int(row.id) if verify_password(password, row.password_hash) else None


_DUMMY = hash_password("not a password")
