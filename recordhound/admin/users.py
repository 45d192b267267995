"""Admin logins: names and argon2id password hashes in the product database's ``admin_users``.

Hashes made before argon2 (scrypt, N = 2^14) still verify and are replaced by an argon2 hash at
the next successful login. Each user has a session epoch: a session is valid only while it
carries the current one, so logout and a password change end every session of that user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Engine, insert, select, update

from recordhound.db.models import AdminUser
from recordhound.exceptions import RecordhoundError

MIN_PASSWORD = 8
_HASHER = PasswordHasher()  # argon2id with the library's current recommended cost


class AdminUserError(RecordhoundError):
    """A user that cannot be created (name taken, password too short)."""


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify_password(password: str, stored: str) -> bool:
    if stored.startswith("scrypt$"):
        return _verify_scrypt(password, stored)
    try:
        return bool(_HASHER.verify(stored, password))
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    return stored.startswith("scrypt$") or _HASHER.check_needs_rehash(stored)


def _verify_scrypt(password: str, stored: str) -> bool:
    """The hashes of recordhound 0.1 (scrypt$N$r$p$salt$digest)."""
    try:
        _, n, r, p, salt, digest = stored.split("$")
        got = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p))
    except ValueError:
        return False
    return hmac.compare_digest(got, base64.b64decode(digest))


def _checked_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AdminUserError(f"the password needs at least {MIN_PASSWORD} characters")


def create_user(engine: Engine, name: str, password: str) -> int:
    name = name.strip()
    if not name or len(name) > 100:
        raise AdminUserError(f"a user name has 1 to 100 characters, got {len(name)}")
    _checked_password(password)
    with engine.begin() as conn:
        if conn.execute(select(AdminUser.id).where(AdminUser.name == name)).scalar() is not None:
            raise AdminUserError(f"user {name!r} exists already")
        return int(conn.execute(insert(AdminUser).values(
            name=name, password_hash=hash_password(password), created_at=datetime.now(UTC), session_epoch=0,
        ).returning(AdminUser.id)).scalar_one())


def set_password(engine: Engine, name: str, password: str) -> None:
    """A new password; every session of the user ends."""
    _checked_password(password)
    with engine.begin() as conn:
        done = conn.execute(update(AdminUser).where(AdminUser.name == name).values(
            password_hash=hash_password(password), session_epoch=AdminUser.session_epoch + 1))
    if not done.rowcount:
        raise AdminUserError(f"no admin user {name!r}")


def end_sessions(engine: Engine, user_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(update(AdminUser).where(AdminUser.id == user_id).values(
            session_epoch=AdminUser.session_epoch + 1))


def session_epoch(engine: Engine, user_id: int) -> int | None:
    """The user's current epoch; None when the user is gone."""
    with engine.connect() as conn:
        found = conn.execute(select(AdminUser.session_epoch).where(AdminUser.id == user_id)).scalar()
    return None if found is None else int(found)


def check_login(engine: Engine, name: str, password: str) -> tuple[int, int] | None:
    """(user id, session epoch) when the password is right, else None (same work either way).
    An old hash is replaced by an argon2 one on the way."""
    with engine.connect() as conn:
        row = conn.execute(select(AdminUser.id, AdminUser.password_hash, AdminUser.session_epoch)
                           .where(AdminUser.name == name)).first()
    if row is None:
        verify_password(password, _DUMMY)  # no timing difference between "no user" and "wrong password"
        return None
    if not verify_password(password, row.password_hash):
        return None
    if needs_rehash(row.password_hash):
        with engine.begin() as conn:
            conn.execute(update(AdminUser).where(AdminUser.id == row.id, AdminUser.password_hash == row.password_hash)
                         .values(password_hash=hash_password(password)))
    return int(row.id), int(row.session_epoch)


_DUMMY = hash_password("not a password")
