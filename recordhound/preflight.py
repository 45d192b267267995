"""Checks before a crawl starts: the profile loads, the settings parse, Redis and the product
database answer (and its schema is not newer than this code's), the embedded review queue's file opens. Each failure is one
:class:`RecordhoundError` naming the setting and what to do, so ``scrapy crawl`` prints one line and
exits 1 instead of the engine's tracebacks."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from recordhound.backoff import backoff_seconds
from recordhound.config import FrontierConfig, ReviewConfig, StoreConfig, follow_enabled, non_negative_float
from recordhound.exceptions import RecordhoundError, Unavailable, first_line
from recordhound.sources import load_profile

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)
T = TypeVar("T")
PASSWORD_PARAMETER = re.compile(r"(?i)((?:^|&)password=)[^&]*")  # a URL query's password (redis-py reads one)

CONNECT_TIMEOUT_SECONDS = 5.0
# PostgreSQL's answers to a connection that no wait cures (a plain user error, exit 1, not ``Unavailable``):
# a wrong password or authentication method, a database or role that does not exist, no pg_hba.conf entry.
# A role an administrator locked out for a while (NOLOGIN: "is not permitted to log in") is waited for.
# (libpq gives no error code for a failed connection: its message, in the server's lc_messages, is matched.)
PG_REFUSALS = ("authentication failed", "does not exist", "no password supplied", "pg_hba.conf",
               "does not support SSL", "permission denied for database")  # (the last: CONNECT revoked)
# SQLite's errors of a file that cannot be used as the product database (any statement may meet them: a file
# is opened lazily; "database is locked": another process holds it, worth another try).
SQLITE_OPENING = ("unable to open", "file is not a database", "readonly", "database is locked", "malformed",
                  "disk I/O error")


def check(settings: BaseSettings, spider_args: dict[str, str]) -> None:
    from recordhound.frontier.politeness import politeness_limits
    from recordhound.frontier.retry import RetryPolicy

    profile = load_profile(spider_args.get("source") or "demo", settings.getlist("RECORDHOUND_PROFILES_DIRS"))
    RetryPolicy.from_settings(settings, profile.retry)
    politeness_limits(settings, profile)
    follow_enabled(settings, spider_args.get("follow"))
    non_negative_float(settings, "RECORDHOUND_HEALTH_MAX_FAILED_SHARE")
    frontier = FrontierConfig.from_settings(settings)
    if frontier.redis_url:
        _ping_redis(frontier.redis_url)
    if settings.getbool("RECORDHOUND_STORE_ENABLED"):
        _check_database(StoreConfig.from_settings(settings).database_url)
        _open_review_file(ReviewConfig.from_settings(settings))


def _ping_redis(url: str) -> None:
    import redis

    from recordhound.redis_client import connect, is_cluster

    try:  # a Redis Cluster client connects when it is made
        client = connect(url, socket_timeout=CONNECT_TIMEOUT_SECONDS, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS)
    except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
        raise redis_unreachable(url, exc) from exc
    try:
        client.ping()
        role = "" if is_cluster(url) else _role(client)
    except redis.RedisError as exc:
        raise redis_unreachable(url, exc) from exc
    finally:
        client.close()
    if role in ("slave", "replica"):  # it answers, and refuses every write (Dragonfly says "replica")
        raise RecordhoundError(f"Redis at REDIS_URL={safe_url(url)} is a read-only replica; point REDIS_URL at "
                               f"its master")


def _role(client: Any) -> str:
    """Redis's ROLE (master, slave, sentinel); "" when an ACL forbids asking."""
    import redis

    try:
        role = client.execute_command("ROLE")[0]
    except redis.ResponseError:
        return ""
    return role.decode() if isinstance(role, bytes) else str(role)


def redis_unreachable(url: str, exc: Exception) -> RecordhoundError:
    """Redis did not answer (``Unavailable``: worth another try), or answered and refused (a password, a
    user's rights, a database index it does not have: a plain user error, no wait cures it)."""
    import redis

    from recordhound.frontier.redis import transient  # the frontier's rule (that module imports this one)

    refused = isinstance(exc, (redis.AuthenticationError, redis.exceptions.AuthorizationError)) or (
        isinstance(exc, redis.ResponseError) and not transient(exc))  # an error reply: busy, loading... waits
    if isinstance(exc, redis.exceptions.ReadOnlyError):
        advice = "it is a read-only replica: point REDIS_URL at its master"
    elif isinstance(exc, getattr(redis.exceptions, "OutOfMemoryError", ())):  # (redis-py 5.1 on)
        advice = "its memory is full (maxmemory): free some or raise it"
    elif refused:
        advice = "check the user, password and database index in REDIS_URL"
    elif isinstance(exc, redis.ResponseError):
        advice = "it answers that it cannot serve now: try again"
    elif url.startswith("rediss") and isinstance(exc, redis.TimeoutError):  # (the handshake waits for an answer)
        advice = "start Redis (a Redis without TLS never answers rediss://: use redis:// for it)"
    else:
        advice = "start Redis"
    return (RecordhoundError if refused else Unavailable)(
        f"cannot reach Redis at REDIS_URL={safe_url(url)}: {exc}; {advice}, or unset REDIS_URL to use the "
        f"embedded frontier")


def _check_database(url: str) -> None:
    """The product database answers, and its schema is not newer than this code's. Read with the
    driver (``db/revision.py``): the crawler leaves SQLAlchemy to its writer process; a URL only
    SQLAlchemy reads is checked with it."""
    from recordhound.db.revision import NotPlain, Unreachable, stored_revision, unusable_schema

    try:
        try:
            revision = stored_revision(url)
        except NotPlain:
            revision = _stored_revision_by_sqlalchemy(url)
    except Unreachable as exc:
        raise database_unreachable(url, exc) from exc
    if (unusable := unusable_schema(f"DATABASE_URL={safe_url(url)}", revision)) is not None:
        raise RecordhoundError(unusable)


def database_unreachable(url: str, exc: BaseException) -> RecordhoundError:
    """The product database did not answer (``Unavailable``: worth another try), or answered and refused
    (``PG_REFUSALS``; a SQLite file that does not open, not one another process holds locked: a plain user
    error, no wait cures it)."""
    said = str(exc)
    locked = url.startswith("sqlite") and "database is locked" in said
    refused = url.startswith("sqlite") and not locked or any(w in said for w in PG_REFUSALS)
    advice = ("another process holds it locked: try again" if locked else "point DATABASE_URL at a SQLite database "
              "file this process can open and write" if url.startswith("sqlite") else
              "start it, or unset DATABASE_URL to use the SQLite file")
    return (RecordhoundError if refused else Unavailable)(
        f"cannot reach the product database at DATABASE_URL={safe_url(url)}: {first_line(exc)}; {advice}")


def unreachable(exc: BaseException, settings: Callable[[], BaseSettings]) -> RecordhoundError | None:
    """``exc`` as the one line a command says when it could not reach the product database or Redis, lost its
    connection, or was refused (``database_unreachable``, ``redis_unreachable``); None for any other error (a
    bug, a constraint, a conflict: it keeps its traceback). A client module a command never imported cannot
    have raised: it is looked up, not imported. A recordhound error that wraps such a Redis error (the review
    queue's) is said the same way. ``settings`` is read only for an error that is one of these."""
    import sys

    from recordhound.config import database_url, redis_url

    orm = sys.modules.get("sqlalchemy.exc")
    if orm is not None and _lost_database(exc, orm):
        return database_unreachable(database_url(settings()), exc)
    redis = sys.modules.get("redis")
    met = _redis_error(exc)
    if redis is not None and met is not None and _lost_redis(met, redis):
        return redis_unreachable(redis_url(settings()), met)
    return None


def redis_not_answering(exc: BaseException) -> bool:
    """``exc`` is a Redis that does not answer now, or answers that it cannot serve yet: what ``unreachable``
    says as ``Unavailable`` (not one that refuses, nor an error of a command sent)."""
    import redis

    met = _redis_error(exc)
    return met is not None and _lost_redis(met, redis) and isinstance(redis_unreachable("", met), Unavailable)


def _redis_error(exc: BaseException) -> Exception | None:
    """The error a command met: ``exc``, or the one behind a recordhound error that wraps it (the review
    queue's)."""
    met = exc.__cause__ if isinstance(exc, RecordhoundError) and not isinstance(exc, Unavailable) else exc
    return met if isinstance(met, Exception) else None


def when_reachable(open_: Callable[[], T], settings: Callable[[], BaseSettings], doing: str, cap_seconds: float) -> T:
    """``open_()``, tried again while the product database or Redis it opens does not answer (``unreachable``
    says ``Unavailable``), one warning per try, backing off to ``cap_seconds``: a daemon started before its
    services waits for them. One that answers and refuses, and any other error, is raised."""
    attempt = 0
    while True:
        try:
            return open_()
        except Exception as exc:
            if not isinstance(said := unreachable(exc, settings), Unavailable):
                raise
            attempt += 1
            delay = backoff_seconds(attempt, cap_seconds)
            logger.warning("%s (%s: tried again in %.1f s)", said, doing, delay)
            time.sleep(delay)


def _lost_database(exc: BaseException, orm: Any) -> bool:
    """A connection the database dropped (whatever the error's class); a driver's operational or interface
    error raised while connecting (no statement: SQLAlchemy also raises so at BEGIN and COMMIT, so not a
    conflict a transaction met there, SQLSTATE class 40); a SQLite file that cannot be used
    (``SQLITE_OPENING``, at any statement). Not a constraint, a bad statement, a bug."""
    if not isinstance(exc, orm.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if type(exc.orig).__module__ == "sqlite3":
        return any(words in str(exc.orig) for words in SQLITE_OPENING)
    if not isinstance(exc, (orm.OperationalError, orm.InterfaceError)):
        return False
    return exc.statement is None and not str(getattr(exc.orig, "sqlstate", None) or "").startswith("40")


def _lost_redis(exc: Exception, redis: Any) -> bool:
    """Redis did not answer (a cluster none of whose nodes answers, a slot no node serves), answered that it
    cannot serve now (``frontier.redis.transient``), or refused us: a password, a user's rights, a database
    index it does not have, a read-only replica, its memory full. Not an error of a command we sent."""
    from recordhound.frontier.redis import transient

    errors = redis.exceptions
    lost_or_refused = (redis.ConnectionError, errors.SlotNotCoveredError, errors.NoPermissionError, errors.ReadOnlyError,
                   *(getattr(errors, name, ()) for name in ("RedisClusterUnreachableError", "OutOfMemoryError")))
    return (transient(exc) or isinstance(exc, lost_or_refused)
            or isinstance(exc, redis.ResponseError) and "DB index is out of range" in str(exc))


def _stored_revision_by_sqlalchemy(url: str) -> str | None:
    from sqlalchemy.exc import SQLAlchemyError

    from recordhound.db.engine import make_engine
    from recordhound.db.migrate import stored_revision
    from recordhound.db.revision import Unreachable

    engine = make_engine(url)
    try:
        with engine.connect():
            pass
        return stored_revision(engine)
    except SQLAlchemyError as exc:
        raise Unreachable(first_line(exc)) from exc
    finally:
        engine.dispose()


def _open_review_file(config: ReviewConfig) -> None:
    """The store's writer opens the review queue at its first batch; a file it cannot open would have
    every batch retried for as long as the crawl runs (a Redis queue: Redis was checked above)."""
    if config.redis_url:
        return
    from recordhound.review.docstore import ReviewStoreError, SqliteDocStore

    try:
        SqliteDocStore(config.path).close()
    except ReviewStoreError as exc:
        raise RecordhoundError(f"{exc}; set RECORDHOUND_REVIEW_PATH to a file this process can write") from exc


def safe_url(url: str) -> str:
    """The URL without its password, for messages: the one in its user part (up to the last ``@``: a password
    may hold one unescaped, as redis-py reads it) and a ``password=`` of its query."""
    scheme, slashes, rest = url.partition("//")
    if not slashes:
        return url
    address, mark, query = rest.partition("?")
    if "@" in address:
        user_part, host = address.rsplit("@", 1)
        user, colon, _ = user_part.partition(":")
        address = f"{user}:***@{host}" if colon else address
    query = PASSWORD_PARAMETER.sub(r"\1***", query)
    return f"{scheme}//{address}{mark}{query}"
