"""Where the review queue keeps its documents: embedded SQLite or Redis, behind one interface.

The queue's logic (``review/queue.py``) is written once against :class:`Txn`: JSON documents
in named collections, read and written inside a serializable transaction. Collections map to
Redis hashes named ``PREFIX:tasks:pending``, ``PREFIX:tasks:approved``, ... (the design's key
names; on a Redis Cluster ``{PREFIX}:tasks:pending``, ...: one hash tag puts the queue's keys in one
slot, which its transactions need) and to rows of one ``docs`` table in the embedded file.

- SQLite: ``BEGIN IMMEDIATE``; the file's write lock serializes transactions across processes.
- Redis: optimistic — ``WATCH`` one version key, read, queue the writes, ``MULTI``/``EXEC``
  with the version bumped; a concurrent commit makes ``EXEC`` fail and the function re-runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from recordhound.exceptions import RecordhoundError
from recordhound.sqlite_tx import immediate

T = TypeVar("T")
Doc = dict[str, Any]
_DELETED = object()


class ReviewStoreError(RecordhoundError):
    """The review queue's store (Redis or the embedded file) is unreachable or broken."""


class Txn(ABC):
    """Reads see this transaction's own writes."""

    @abstractmethod
    def get(self, collection: str, key: str) -> Doc | None: ...

    @abstractmethod
    def get_many(self, collection: str, keys: list[str]) -> dict[str, Doc]: ...

    @abstractmethod
    def all(self, collection: str) -> dict[str, Doc]: ...

    @abstractmethod
    def put(self, collection: str, key: str, doc: Doc) -> None: ...

    @abstractmethod
    def delete(self, collection: str, key: str) -> None: ...

    @abstractmethod
    def count(self, collection: str) -> int: ...

    @abstractmethod
    def next_id(self) -> int:
        """A new id, never handed out before (ids may be skipped, never repeated)."""

    def move(self, source: str, target: str, key: str, doc: Doc) -> None:
        self.delete(source, key)
        self.put(target, key, doc)


class DocStore(ABC):
    @abstractmethod
    def run(self, work: Callable[[Txn], T]) -> T:
        """Run ``work`` in one transaction (possibly more than once, on Redis) and commit it."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def drop(self) -> None:
        """Delete everything this store holds (tests, `frontier reset`-like maintenance)."""


SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    collection TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (collection, key))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sequence (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
"""


class SqliteTxn(Txn):
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def get(self, collection: str, key: str) -> Doc | None:
        row = self.db.execute("SELECT body FROM docs WHERE collection = ? AND key = ?",
                              (collection, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, collection: str, keys: list[str]) -> dict[str, Doc]:
        found: dict[str, Doc] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, body in self.db.execute(
                    f"SELECT key, body FROM docs WHERE collection = ? AND key IN ({marks})",
                    (collection, *chunk)):
                found[key] = json.loads(body)
        return found

    def all(self, collection: str) -> dict[str, Doc]:
        rows = self.db.execute("SELECT key, body FROM docs WHERE collection = ?", (collection,))
        return {key: json.loads(body) for key, body in rows}

    def put(self, collection: str, key: str, doc: Doc) -> None:
        self.db.execute("INSERT OR REPLACE INTO docs (collection, key, body) VALUES (?, ?, ?)",
                        (collection, key, json.dumps(doc, default=str)))

    def delete(self, collection: str, key: str) -> None:
        self.db.execute("DELETE FROM docs WHERE collection = ? AND key = ?", (collection, key))

    def count(self, collection: str) -> int:
        return int(self.db.execute("SELECT count(*) FROM docs WHERE collection = ?",
                                   (collection,)).fetchone()[0])

    def next_id(self) -> int:
        self.db.execute("INSERT INTO sequence (name, value) VALUES ('review', 1) "
                        "ON CONFLICT (name) DO UPDATE SET value = value + 1")
        return int(self.db.execute("SELECT value FROM sequence WHERE name = 'review'").fetchone()[0])


class SqliteDocStore(DocStore):
    """The embedded queue: a SQLite file of its own (never the product database)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self.db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")  # a decision, once acknowledged, survives a crash
            self.db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ReviewStoreError(f"cannot open the review queue file {path}: {exc}") from exc

    def run(self, work: Callable[[Txn], T]) -> T:
        with self._tx() as db:
            return work(SqliteTxn(db))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction at a time on the shared connection: the admin's request threads and its
        apply worker use one store (two BEGINs on one connection fail)."""
        try:
            with self._lock, immediate(self.db) as db:
                yield db
        except sqlite3.OperationalError as exc:  # locked or busy past the timeout, disk I/O
            raise ReviewStoreError(f"review queue file {self.path}: {exc}") from exc

    def close(self) -> None:
        self.db.close()

    def drop(self) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM docs")
            db.execute("DELETE FROM sequence")


class RedisTxn(Txn):
    """Reads go to Redis (under WATCH); writes are kept here until ``commit``."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.client, self.prefix = client, prefix
        self.writes: dict[tuple[str, str], Doc | object] = {}
        self.read: dict[tuple[str, str], Doc | None] = {}  # valid for the transaction: keys are watched

    def _key(self, collection: str) -> str:
        return f"{self.prefix}:{collection}"

    def get(self, collection: str, key: str) -> Doc | None:
        return self.get_many(collection, [key]).get(key)

    def get_many(self, collection: str, keys: list[str]) -> dict[str, Doc]:
        found: dict[str, Doc] = {}
        remote = [k for k in keys if (collection, k) not in self.writes and (collection, k) not in self.read]
        if remote:
            for key, body in zip(remote, self.client.hmget(self._key(collection), remote)):
                self.read[(collection, key)] = None if body is None else json.loads(body)
        for key in keys:
            cached = self.read.get((collection, key))
            if cached is not None and (collection, key) not in self.writes:
                found[key] = cached
            local = self.writes.get((collection, key))
            if isinstance(local, dict):
                found[key] = local
        return found

    def all(self, collection: str) -> dict[str, Doc]:
        found = {k.decode(): json.loads(v) for k, v in self.client.hgetall(self._key(collection)).items()}
        for (coll, key), doc in self.writes.items():
            if coll != collection:
                continue
            if isinstance(doc, dict):
                found[key] = doc
            else:
                found.pop(key, None)
        return found

    def put(self, collection: str, key: str, doc: Doc) -> None:
        self.writes[(collection, key)] = json.loads(json.dumps(doc, default=str))

    def delete(self, collection: str, key: str) -> None:
        self.writes[(collection, key)] = _DELETED

    def count(self, collection: str) -> int:
        if not any(coll == collection for coll, _ in self.writes):
            return int(self.client.hlen(self._key(collection)))
        return len(self.all(collection))

    def next_id(self) -> int:
        return int(self.client.incr(f"{self.prefix}:review:sequence"))

    def commit(self, pipe: Any) -> None:
        for (collection, key), doc in self.writes.items():
            if isinstance(doc, dict):
                pipe.hset(self._key(collection), key, json.dumps(doc))
            else:
                pipe.hdel(self._key(collection), key)
        pipe.incr(f"{self.prefix}:review:version")


class RedisDocStore(DocStore):
    def __init__(self, url: str, prefix: str) -> None:
        import redis

        from recordhound.redis_client import connect, is_cluster

        self.prefix = f"{{{prefix}}}" if is_cluster(url) else prefix
        self._redis = redis
        try:  # a Redis Cluster client connects here, and an outage is the review queue's (retried)
            self.client = connect(url, socket_timeout=30, socket_connect_timeout=10)
        except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
            raise ReviewStoreError(f"review queue on Redis ({self.prefix}): {exc}") from exc

    def run(self, work: Callable[[Txn], T]) -> T:
        redis = self._redis
        try:
            while True:
                with self.client.pipeline(transaction=True) as pipe:  # explicit: a cluster defaults to none
                    try:
                        pipe.watch(f"{self.prefix}:review:version")
                        txn = RedisTxn(pipe, self.prefix)
                        result = work(txn)
                        if txn.writes:
                            pipe.multi()
                            txn.commit(pipe)
                            pipe.execute()
                        return result
                    except redis.WatchError:
                        continue  # another transaction committed first: run again on fresh data
        except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
            raise ReviewStoreError(f"review queue on Redis ({self.prefix}): {exc}") from exc

    def close(self) -> None:
        self.client.close()

    def drop(self) -> None:
        keys = list(self.client.scan_iter(match=f"{self.prefix}:tasks:*", count=1000))
        keys += list(self.client.scan_iter(match=f"{self.prefix}:review:*", count=1000))
        if keys:
            self.client.delete(*keys)
