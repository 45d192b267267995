"""Embedded frontier: one SQLite file (WAL) per crawl, under JOBDIR or a per-source folder.

Tables: ``queue`` (queued rows have owner NULL; leased rows name their node and expiry;
``history`` is the JSON list of an entry's attempts; a row that waits until ``not_before`` has
``scheduled`` RECHECK (a done request kept for a recheck, with its ``state``) or RETRY (a retry
waiting out its backoff); a lease first queues the waiting rows whose time has come; ``lost`` counts
its expired leases, ``attempts`` all its leases and is the fencing token), ``seen`` (8-byte
fingerprints, WITHOUT ROWID), ``failed`` (dead letters), ``counters``, ``nodes``, ``trying`` (per
node, the lease its process tries alone: see ``FrontierBackend.try_alone``).
Several processes on one machine may share the file; SQLite's write lock serializes them.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from contextlib import AbstractContextManager

from recordhound.exceptions import RecordhoundError
from recordhound.sqlite_tx import immediate, snapshot
from recordhound.frontier import sqlite_space
from recordhound.frontier.backend import (
    FAILED, LEASED, QUEUED, REQUEUED, SCHEDULED, WAITING, Committed, Counts, DeadLetter, Entry, EntryState,
    Failure, FrontierBackend, Lease, Leased, NodeInfo, Recheck, Reconciled, count_tries, parse_history)

SCHEMA = """
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT, priority INTEGER NOT NULL, payload TEXT NOT NULL,
    owner TEXT, expires REAL, attempts INTEGER NOT NULL DEFAULT 0, not_before REAL, history TEXT,
    scheduled INTEGER NOT NULL DEFAULT 0, state TEXT, lost INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS queue_leased ON queue(owner, expires) WHERE owner IS NOT NULL;
CREATE TABLE IF NOT EXISTS seen (fp BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS failed (id INTEGER PRIMARY KEY, payload TEXT, reason TEXT, at REAL,
    history TEXT, priority INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS nodes (node TEXT PRIMARY KEY, host TEXT, pid INTEGER, token TEXT, heartbeat REAL);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trying (node TEXT PRIMARY KEY, id INTEGER NOT NULL, token INTEGER NOT NULL) WITHOUT ROWID;
"""
TRANSIENT_ERRORS = ("database is locked", "database table is locked", "database or disk is full",
                    "disk I/O error", "locking protocol")  # OperationalErrors that pass: the rest are bugs or setup
CURRENT = "id = ? AND attempts = ? AND owner IS NOT NULL"  # the lease named by (id, token) is current
RECHECK, RETRY = 1, 2  # queue.scheduled of a row waiting for its not_before (0: queued or leased)
ADDED_COLUMNS = {  # columns newer than the first frontier files: added when an older file is opened
    "queue": ("not_before REAL", "history TEXT", "scheduled INTEGER NOT NULL DEFAULT 0", "state TEXT",
              "lost INTEGER NOT NULL DEFAULT 0"),
    "failed": ("history TEXT", "priority INTEGER NOT NULL DEFAULT 0", "attempts INTEGER NOT NULL DEFAULT 0"),
}


class SqliteFrontier(FrontierBackend):
    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path, self.timeout = path, timeout  # timeout: the longest wait for the file's write lock
        self._db: sqlite3.Connection | None = None
        self._reset_by = ""  # the token of the reset this handle began (fences its ``reset``)

    def open(self) -> None:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            sqlite_space.prepare_new(self._db)
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise RecordhoundError(f"the frontier file {self.path} cannot use SQLite's WAL mode (it stays "
                                       f"{mode!r}: a network file system?); put RECORDHOUND_FRONTIER_DIR or "
                                       "JOBDIR on a local disk")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            self._add_columns(self._db)
            sqlite_space.convert_old(self._db, self.path)
        except (OSError, sqlite3.Error) as exc:
            raise RecordhoundError(f"cannot open the frontier file {self.path}: {exc}") from exc

    @staticmethod
    def _add_columns(db: sqlite3.Connection) -> None:
        """Columns and indexes newer than a file: ``queue_ready`` holds only what is queued (not the
        rechecks waiting for their due time, which ``queue_due`` finds), so leasing never walks them."""
        with immediate(db):
            for table, columns in ADDED_COLUMNS.items():
                present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                for column in columns:
                    if column.split()[0] not in present:
                        db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            ready = db.execute("SELECT sql FROM sqlite_master WHERE name = 'queue_ready'").fetchone()
            if ready is not None and "scheduled" not in ready[0]:
                db.execute("DROP INDEX queue_ready")  # a file from before rechecks
            db.execute("CREATE INDEX IF NOT EXISTS queue_ready ON queue(priority DESC, id) "
                       "WHERE owner IS NULL AND scheduled = 0")
            db.execute("CREATE INDEX IF NOT EXISTS queue_due ON queue(scheduled, not_before) WHERE owner IS NULL")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        assert self._db is not None, "frontier is not open"
        return immediate(self._db)

    def now(self) -> float:
        return time.time()

    def probe(self) -> None:
        """The file's write lock can be taken (what a "busy" outage took away)."""
        with self._tx() as db:
            db.execute("SELECT 1 FROM state LIMIT 1")

    @staticmethod
    def _add(db: sqlite3.Connection, name: str, delta: int) -> None:
        if delta:
            db.execute("INSERT INTO counters VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + ?",
                       (name, delta, delta))

    def limit_wait(self, seconds: float) -> None:
        assert self._db is not None
        self._db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def _transient(self, exc: BaseException) -> bool:
        """Locked or busy past the wait, a disk I/O error, a full disk; not a read-only or missing file."""
        return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(TRANSIENT_ERRORS)

    def commit(self, entries: list[Entry], acks: list[Lease], failures: list[Failure],
               seeded: bool = False, rechecks: list[Recheck] | None = None, writer: str = "",
               floor: int = 0) -> Committed:
        queued = seen = 0
        with self._tx() as db:
            writes = self._writes(db, writer)
            if writer and writes < floor:
                return Committed(0, 0, writes, regressed=True)
            for entry in entries:
                if entry.fingerprint is not None:
                    if not db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (entry.fingerprint,)).rowcount:
                        continue
                    seen += 1
                db.execute("INSERT INTO queue (priority, payload) VALUES (?, ?)", (entry.priority, entry.payload))
                queued += 1
            self._add(db, "seen", seen)
            self._add(db, "queued", queued)
            done = sum(db.execute(f"DELETE FROM queue WHERE {CURRENT}", (a.id, a.token)).rowcount for a in acks)
            taken = self._fail(db, failures)  # acks, failures, rechecks: Redis's order (a lease named twice)
            kept = sum(db.execute(
                f"UPDATE queue SET owner = NULL, expires = NULL, not_before = ?, scheduled = {RECHECK}, state = ?, "
                f"history = NULL, lost = 0 WHERE {CURRENT}", (self.now() + r.due_in, r.state, r.lease.id, r.lease.token)).rowcount
                for r in rechecks or ())
            self._add(db, "done", done + kept)
            self._add(db, "scheduled", kept)
            done += kept
            acks = [*acks, *(r.lease for r in rechecks or ())]
            if seeded:
                db.execute("INSERT OR REPLACE INTO state VALUES ('seeded', '1')")
            if writer:
                self._add(db, f"writes:{writer}", 1)
                writes += 1
        if done or taken:
            sqlite_space.give_back(db)  # rows were deleted: a draining queue gives its pages back
        return Committed(queued, len(acks) + len(failures) - done - taken, writes)

    @staticmethod
    def _writes(db: sqlite3.Connection, writer: str) -> int:
        row = db.execute("SELECT value FROM counters WHERE name = ?", (f"writes:{writer}",)).fetchone() if writer else None
        return int(row[0]) if row else 0

    def _fail(self, db: sqlite3.Connection, failures: list[Failure]) -> int:
        """Retries go back to the queue to wait, the rest to the dead letters; returns how many
        failures were taken (the rest named a lease that is no longer current)."""
        failed = retried = 0
        now = self.now()
        for failure in failures:
            lease = (failure.lease.id, failure.lease.token)
            row = db.execute(f"SELECT history FROM queue WHERE {CURRENT}", lease).fetchone()
            if row is None:
                continue
            history = _appended(row[0], failure.attempt)
            if failure.retry_in is not None:
                db.execute(f"UPDATE queue SET owner = NULL, expires = NULL, not_before = ?, scheduled = {RETRY}, "
                           f"history = ? WHERE {CURRENT}", (now + failure.retry_in, history, *lease))
                retried += 1
                continue
            payload, priority, attempts = db.execute(
                f"DELETE FROM queue WHERE {CURRENT} RETURNING payload, priority, attempts", lease).fetchone()
            db.execute("INSERT INTO failed (id, payload, reason, at, history, priority, attempts) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (failure.lease.id, payload, failure.reason, now, history, priority, attempts))
            failed += 1
        self._add(db, "failed", failed)
        self._add(db, "queued", retried)
        return failed + retried

    def lease(self, node: str, count: int, lease_seconds: float, fresh_only: bool = False) -> list[Leased]:
        now = self.now()
        with self._tx() as db:
            # waiting rows whose time has come take their place in line; a recheck is no longer done
            due = {kind: db.execute("UPDATE queue SET scheduled = 0 WHERE owner IS NULL AND scheduled = ? "
                                    "AND not_before <= ?", (kind, now)).rowcount for kind in (RECHECK, RETRY)}
            self._add(db, "scheduled", -due[RECHECK])
            self._add(db, "done", -due[RECHECK])
            self._add(db, "queued", due[RECHECK])  # a retry was counted as queued while it waited
            # INDEXED BY: the planner would otherwise take queue_due and sort every queued row
            rows = db.execute(
                "UPDATE queue SET owner = ?, expires = ?, attempts = attempts + 1 WHERE id IN ("
                " SELECT id FROM queue INDEXED BY queue_ready WHERE owner IS NULL AND scheduled = 0"
                f"{' AND lost = 0' if fresh_only else ''} ORDER BY priority DESC, id LIMIT ?)"
                " RETURNING id, payload, attempts, priority, history, state, lost",
                (node, now + lease_seconds, count)).fetchall()
            self._add(db, "queued", -len(rows))
        rows.sort(key=lambda r: (-r[3], r[0]))
        return [Leased(r[0], r[1], r[2], r[2], lost=r[6], tries=count_tries(r[4]), state=r[5] or "")
                for r in rows]

    def _expire(self, where: str, params: tuple[object, ...]) -> int:
        """Leases whose holder is gone go back to the queue: the one its holder was trying alone
        counts one more loss, the others become suspects (see ``try_alone``)."""
        with self._tx() as db:
            moved = db.execute(
                "UPDATE queue SET owner = NULL, expires = NULL, lost = CASE WHEN EXISTS (SELECT 1 FROM trying t "
                "WHERE t.node = queue.owner AND t.id = queue.id AND t.token = queue.attempts) THEN lost + 1 "
                f"ELSE max(lost, 1) END WHERE owner IS NOT NULL AND {where}", params).rowcount
            db.execute("DELETE FROM trying WHERE NOT EXISTS (SELECT 1 FROM queue q WHERE q.id = trying.id "
                       "AND q.attempts = trying.token AND q.owner = trying.node)")  # marks of no current lease
            self._add(db, "queued", moved)
        return moved

    def try_alone(self, node: str, lease: Lease | None) -> None:
        with self._tx() as db:
            if lease is None:
                db.execute("DELETE FROM trying WHERE node = ?", (node,))
            else:
                db.execute("INSERT OR REPLACE INTO trying VALUES (?, ?, ?)", (node, lease.id, lease.token))

    @staticmethod
    def _release(db: sqlite3.Connection, leases: list[Lease], node: str | None = None) -> int:
        where = CURRENT if node is None else f"{CURRENT} AND owner = ?"
        moved = sum(db.execute(f"UPDATE queue SET owner = NULL, expires = NULL WHERE {where}",
                               (lease.id, lease.token, *(() if node is None else (node,)))).rowcount
                    for lease in leases)
        SqliteFrontier._add(db, "queued", moved)
        return moved

    def release(self, leases: list[Lease]) -> int:
        with self._tx() as db:
            return self._release(db, leases)

    def renew(self, node: str, leases: list[Lease], lease_seconds: float) -> list[Lease]:
        expires = self.now() + lease_seconds
        with self._tx() as db:
            return [lease for lease in leases if not db.execute(
                f"UPDATE queue SET expires = ? WHERE {CURRENT} AND owner = ?",
                (expires, lease.id, lease.token, node)).rowcount]

    def reconcile(self, node: str, held: list[Lease], token: str = "") -> Reconciled:
        with self._tx() as db:
            registered = db.execute("SELECT token FROM nodes WHERE node = ?", (node,)).fetchone() if token else None
            if registered is not None and registered[0] != token:  # another process owns the node id now
                return Reconciled(0, list(held), taken=True)
            stored = {Lease(r[0], r[1]) for r in db.execute("SELECT id, attempts FROM queue WHERE owner = ?", (node,))}
            released = self._release(db, sorted(stored - set(held), key=lambda lease: lease.id), node)
        return Reconciled(released, [lease for lease in held if lease not in stored])

    def leases_of(self, node: str) -> list[Lease]:
        assert self._db is not None
        return [Lease(r[0], r[1]) for r in self._db.execute("SELECT id, attempts FROM queue WHERE owner = ?", (node,))]

    def reclaim_expired(self) -> int:
        return self._expire("expires < ?", (self.now(),))

    def reclaim_node(self, node: str) -> int:
        return self._expire("owner = ?", (node,))

    def is_seen(self, fingerprint: bytes) -> bool:
        assert self._db is not None
        return self._db.execute("SELECT 1 FROM seen WHERE fp = ?", (fingerprint,)).fetchone() is not None

    def counts(self) -> Counts:
        assert self._db is not None
        now = self.now()
        with snapshot(self._db) as db:
            counters = dict(db.execute("SELECT name, value FROM counters").fetchall())
            leased = dict(db.execute(
                "SELECT owner, count(*) FROM queue WHERE owner IS NOT NULL GROUP BY owner").fetchall())
            state = dict(db.execute("SELECT key, value FROM state").fetchall())
            waiting = db.execute("SELECT count(*) FROM queue WHERE owner IS NULL AND scheduled = ? AND not_before > ?",
                                 (RETRY, now)).fetchone()[0]
            due, soon = db.execute(
                "SELECT count(*) FILTER (WHERE not_before <= ?), count(*) FILTER (WHERE not_before > ? AND "
                "not_before <= ?) FROM queue WHERE owner IS NULL AND scheduled = ?",
                (now, now, now + 3600, RECHECK)).fetchone()
        return Counts(waiting=waiting, queued=counters.get("queued", 0), due=due, leased=leased,
                      scheduled=counters.get("scheduled", 0) - due, due_within_hour=soon,
                      done=counters.get("done", 0) - due,
                      failed=counters.get("failed", 0), seen=counters.get("seen", 0),
                      status=state.get("status") or "new",
                      seeded="seeded" in state or "started" in state,  # "started": files before 0.2
                      start_claim=state.get("start_claim") or "")

    def states(self) -> dict[int, EntryState]:
        assert self._db is not None
        with snapshot(self._db) as db:
            rows = db.execute("SELECT id, owner, attempts, scheduled, lost FROM queue").fetchall()
            failed = [r[0] for r in db.execute("SELECT id FROM failed")]
        found = {i: EntryState(FAILED) for i in failed}
        for row_id, owner, attempts, scheduled, lost in rows:
            if owner is not None:
                found[row_id] = EntryState(LEASED, lost, owner, attempts)
            else:
                found[row_id] = EntryState({0: QUEUED, RECHECK: SCHEDULED, RETRY: WAITING}[scheduled], lost)
        return found

    def failures(self, limit: int = 100) -> list[tuple[str, str]]:
        assert self._db is not None
        return self._db.execute("SELECT payload, reason FROM failed ORDER BY at DESC LIMIT ?", (limit,)).fetchall()

    def dead_letters(self) -> list[DeadLetter]:
        assert self._db is not None
        rows = self._db.execute("SELECT id, payload, reason, at, history, priority FROM failed ORDER BY at, id")
        return [DeadLetter(r[0], r[1], r[2], r[3], parse_history(r[4]), r[5]) for r in rows]

    def requeue_failed(self, ids: list[int]) -> int:
        moved = 0
        with self._tx() as db:
            now = self.now()
            for frontier_id in ids:
                row = db.execute("DELETE FROM failed WHERE id = ? RETURNING payload, priority, attempts, history",
                                 (frontier_id,)).fetchone()
                if row is None:
                    continue
                history = _appended(row[3], json.dumps({"at": now, "outcome": REQUEUED}))
                db.execute("INSERT INTO queue (id, priority, payload, attempts, history) VALUES (?, ?, ?, ?, ?)",
                           (frontier_id, row[1], row[0], row[2], history))
                moved += 1
            self._add(db, "failed", -moved)
            self._add(db, "queued", moved)
            if moved:
                db.execute("UPDATE state SET value = 'running' WHERE key = 'status' AND value = 'completed'")
        return moved

    def claim_start(self, token: str, replace_token: str) -> bool:
        with self._tx() as db:
            state = dict(db.execute("SELECT key, value FROM state").fetchall())
            if "seeded" in state or "started" in state:
                return False
            if state.get("start_claim", "") not in (replace_token, token):
                return False
            db.execute("INSERT OR REPLACE INTO state VALUES ('start_claim', ?)", (token,))
            return True

    def begin_reset(self, expected_status: str, expected_owner: str = "") -> bool:
        owner = secrets.token_hex(8)
        with self._tx() as db:
            state = dict(db.execute("SELECT key, value FROM state WHERE key IN ('status', 'reset_by')").fetchall())
            if state.get("status", "new") != expected_status or (
                    expected_status == "resetting" and state.get("reset_by", "") != expected_owner):
                return False
            db.executemany("INSERT OR REPLACE INTO state VALUES (?, ?)", [("status", "resetting"), ("reset_by", owner)])
        self._reset_by = owner
        return True

    def reset_owner(self) -> str:
        assert self._db is not None
        row = self._db.execute("SELECT value FROM state WHERE key = 'reset_by'").fetchone()
        return str(row[0]) if row else ""

    def set_status(self, status: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO state VALUES ('status', ?)", (status,))

    def nodes(self) -> dict[str, NodeInfo]:
        assert self._db is not None
        rows = self._db.execute("SELECT node, host, pid, token, heartbeat FROM nodes").fetchall()
        return {r[0]: NodeInfo(r[1], r[2], r[3], r[4]) for r in rows}

    def claim_node(self, node: str, info: NodeInfo, replace_token: str | None) -> bool:
        with self._tx() as db:
            row = db.execute("SELECT token FROM nodes WHERE node = ?", (node,)).fetchone()
            if row is not None and row[0] != replace_token:
                return False
            db.execute("INSERT OR REPLACE INTO nodes VALUES (?, ?, ?, ?, ?)",
                       (node, info.host, info.pid, info.token, self.now()))
            return True

    def heartbeat(self, node: str, token: str) -> bool:
        with self._tx() as db:
            return db.execute("UPDATE nodes SET heartbeat = ? WHERE node = ? AND token = ?",
                              (self.now(), node, token)).rowcount == 1

    def leave(self, node: str, token: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM nodes WHERE node = ? AND token = ?", (node, token))

    def verify(self) -> list[str]:
        assert self._db is not None
        with snapshot(self._db) as db:
            return self._verify(db)

    @staticmethod
    def _verify(db: sqlite3.Connection) -> list[str]:
        problems = []
        counters = dict(db.execute("SELECT name, value FROM counters").fetchall())
        ready = db.execute(f"SELECT count(*) FROM queue WHERE owner IS NULL AND scheduled != {RECHECK}").fetchone()[0]
        scheduled = db.execute(f"SELECT count(*) FROM queue WHERE scheduled = {RECHECK}").fetchone()[0]
        if counters.get("scheduled", 0) != scheduled:
            problems.append(f"the scheduled counter says {counters.get('scheduled', 0)}, the queue holds {scheduled}")
        for (row_id,) in db.execute("SELECT id FROM queue WHERE scheduled != 0 AND (owner IS NOT NULL OR not_before IS NULL)"):
            problems.append(f"entry {row_id} waits for a recheck or retry but is leased or has no due time")
        if counters.get("queued", 0) != ready:
            problems.append(f"the queued counter says {counters.get('queued', 0)}, the queue holds {ready}")
        seen = db.execute("SELECT count(*) FROM seen").fetchone()[0]
        if counters.get("seen", 0) != seen:
            problems.append(f"the seen counter says {counters.get('seen', 0)}, the seen-set holds {seen}")
        rows = db.execute("SELECT count(*) FROM queue").fetchone()[0]
        issued = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'queue'").fetchone()
        done, failed = counters.get("done", 0), counters.get("failed", 0)
        rows -= scheduled  # kept for a recheck: counted as done
        if issued is not None and done + failed + rows != issued[0]:
            problems.append(f"{issued[0]} requests were queued, but done {done} + failed {failed} + "
                            f"in the queue {rows} = {done + failed + rows}")
        for (row_id,) in db.execute("SELECT id FROM queue WHERE owner IS NOT NULL AND expires IS NULL"):
            problems.append(f"entry {row_id} is leased without an expiry")
        for (row_id,) in db.execute("SELECT q.id FROM queue q JOIN failed f ON f.id = q.id"):
            problems.append(f"entry {row_id} is failed and still queued")
        for payload, count in db.execute("SELECT payload, count(*) FROM queue GROUP BY payload HAVING count(*) > 1"):
            problems.append(f"the same request is queued {count} times: {payload[:120]}")
        return problems

    def reset(self) -> bool:
        with self._tx() as db:
            owner = db.execute("SELECT value FROM state WHERE key = 'reset_by'").fetchone()
            if self._reset_by and (owner is None or owner[0] != self._reset_by):
                return False  # another party took this handle's reset over (or finished it)
            for table in ("queue", "seen", "failed", "counters", "nodes", "trying", "state"):
                db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
            db.execute("DELETE FROM sqlite_sequence WHERE name = 'queue'")  # ids count from 1 again
        self._reset_by = ""
        return True


def _appended(history: str | None, attempt: str) -> str | None:
    """The stored history with one more attempt (a JSON object; empty: nothing to add)."""
    if not attempt:
        return history
    return json.dumps([*parse_history(history), json.loads(attempt)])
