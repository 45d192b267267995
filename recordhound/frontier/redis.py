"""Redis frontier: one crawl's queue, leases and seen-set, shared by every node.

Key layout (P = ``RECORDHOUND_REDIS_PREFIX:{crawl}``, braces included: the crawl name is the hash tag
of every key, so a whole crawl lives in one hash slot of a Redis Cluster):

    P:queue           ZSET  id -> -priority * 2**40 + id (priority first, then FIFO)
    P:payloads        HASH  id -> request JSON (queued and leased entries)
    P:owner           HASH  id -> "node|score|token" for leased entries (token: random, fences the lease)
    P:expiry          ZSET  id -> lease expiry (Redis clock, seconds)
    P:attempts        HASH  id -> times leased
    P:lost            HASH  id -> leases that expired without an outcome (since queued/requeued/rechecked):
                            1 for a suspect, one more per death while it was tried alone
    P:trying          HASH  node -> "id|token" of the lease its process tries alone (``try_alone``)
    P:leases:{node}   SET   ids leased by node (renew and reclaim by node)
    P:seen:{xxxx}     HASH  6-byte fingerprint tail -> "" (xxxx = first 2 bytes, hex):
                            65,536 small listpack-encoded hashes, ~20 bytes per URL
    P:delayed         ZSET  id -> not-before time of a retry waiting out its backoff
    P:score           HASH  id -> queue score of a waiting retry or recheck (its place in line when due)
    P:history         HASH  id -> JSON list of the entry's attempts {at, node, outcome}
    P:scheduled       ZSET  id -> due time of a done request kept for a recheck (recrawl schedule)
    P:validators      HASH  id -> a recheck's state (JSON: interval, ETag, Last-Modified, fingerprint)
    P:counters        HASH  seq, seen, done, failed
    P:writes          HASH  node -> commits it made (a node that counts more than the store: the store regressed)
    P:failed          LIST  JSON {id, payload, reason, at, history, score, attempts}: dead letters
    P:state           HASH  status, start_claim (a node's token), seeded (start requests queued),
                            reset_by (the owner's token of a reset in progress)
    P:nodes           HASH  node -> JSON {host, pid, token, heartbeat}

Every multi-step update is one Lua script (``redis_scripts.py``). Scripts build the
``P:seen:*`` and ``P:leases:*`` key names themselves from P: legal on a cluster too, since those
keys share the crawl's hash tag (same slot, same node). A crawl stored under the names of before
(``PREFIX:crawl:...``) is renamed at open (``redis_takeover.py``).
Run Redis with ``appendonly yes``, ``appendfsync everysec`` and ``maxmemory-policy noeviction``.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from recordhound.preflight import redis_unreachable
from recordhound.redis_client import connect, is_cluster
from recordhound.frontier import redis_scripts as lua
from recordhound.frontier.backend import (
    FAILED, LEASED, QUEUED, REQUEUED, SCHEDULED, WAITING, Committed, Counts, DeadLetter, Entry, EntryState,
    Failure, FrontierBackend, Lease, Leased, NodeInfo, Recheck, Reconciled, count_tries, parse_history)
from recordhound.frontier.redis_snapshot import COUNTS, SNAPSHOT, STATES, VERIFY, Snapshot
from recordhound.frontier.redis_takeover import take_over

# a Redis that answers but cannot serve now: full (noeviction), a read-only replica, a replica
# without its master, one loading its data, a cluster with slots uncovered, moving, or out of reach
REFUSING = tuple(getattr(redis.exceptions, name) for name in (
    "OutOfMemoryError", "ReadOnlyError", "BusyLoadingError", "ClusterDownError", "TryAgainError",
    "SlotNotCoveredError", "RedisClusterUnreachableError") if hasattr(redis.exceptions, name))
REFUSING_CODES = ("OOM", "READONLY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN",
                  "MISCONF", "NOREPLICAS", "BUSY ")  # and: its disk cannot persist, too few replicas, a long script


def transient(exc: BaseException) -> bool:
    """A Redis that does not answer, or answers that it cannot serve now (``REFUSING``): worth waiting for.
    Not a wrong password, nor any other error reply."""
    if isinstance(exc, (redis.AuthenticationError, redis.exceptions.AuthorizationError)):
        return False  # ConnectionErrors to redis-py; a wrong password or ACL, a TLS certificate refused to us
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, *REFUSING)):
        return True
    # the same refusals reported by an older redis-py as a plain ResponseError with the error code
    return isinstance(exc, redis.ResponseError) and str(exc).startswith(REFUSING_CODES)


MAX_PRIORITY = 4000  # |priority| * 2**40 + id must stay exact in a double


class RedisFrontier(FrontierBackend):
    def __init__(self, url: str, prefix: str, socket_timeout: float = 5.0) -> None:
        self.url, self.prefix, self.socket_timeout = url, prefix, socket_timeout
        self._redis: redis.Redis | None = None
        self._scripts: dict[str, Any] = {}
        self._connections = 0
        self._reset_by = ""  # the token of the reset this handle began (fences its ``reset``)
        names = ("queue", "payloads", "counters", "owner", "expiry", "attempts", "failed", "state", "nodes",
                 "delayed", "score", "history", "scheduled", "validators", "lost", "writes", "trying")
        self.keys = {name: f"{prefix}:{name}" for name in names}

    def open(self) -> None:
        try:
            client = self._connect()  # a Redis Cluster client connects here
            client.ping()
            if not is_cluster(self.url):
                take_over(client, self.prefix)
        except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
            self.close()
            raise redis_unreachable(self.url, exc) from exc

    def _connect(self) -> redis.Redis:
        # no retries inside redis-py: a call fails within its timeout and the caller's outage
        # handling backs off (redis-py's own retries would hold the reactor for seconds)
        client = connect(self.url, socket_timeout=self.socket_timeout, socket_connect_timeout=self.socket_timeout,
                         retry=Retry(NoBackoff(), 0), redis_connect_func=self._connected)
        self._redis = client
        self._scripts = {name: client.register_script(getattr(lua, name))
                         for name in ("COMMIT", "LEASE", "REQUEUE", "RENEW", "CLAIM_NODE", "HEARTBEAT",
                                     "CLAIM_START", "BEGIN_RESET", "RESET_BATCH", "REQUEUE_FAILED")}
        self._scripts["SNAPSHOT"] = client.register_script(SNAPSHOT)
        return client

    def _connected(self, connection: Any) -> None:
        connection.on_connect()
        self._connections += 1

    def connections(self) -> int:
        return self._connections

    def probe(self) -> None:
        self.r.ping()

    def close(self) -> None:
        if self._redis is not None:
            self._redis.close()
            self._redis = None

    @property
    def r(self) -> redis.Redis:
        assert self._redis is not None, "frontier is not open"
        return self._redis

    def _k(self, *names: str) -> list[str]:
        return [self.keys[n] for n in names]

    def now(self) -> float:
        seconds, micros = self.r.time()
        return seconds + micros / 1e6

    def limit_wait(self, seconds: float) -> None:
        """A new client whose socket timeout is ``seconds`` (the open one waited longer)."""
        old, self.socket_timeout = self.r, seconds
        self._connect()
        old.close()

    def _transient(self, exc: BaseException) -> bool:
        return transient(exc)

    def commit(self, entries: list[Entry], acks: list[Lease], failures: list[Failure],
               seeded: bool = False, rechecks: list[Recheck] | None = None, writer: str = "",
               floor: int = 0) -> Committed:
        args: list[Any] = [f"{self.prefix}:seen:", f"{self.prefix}:leases:", len(entries)]
        for entry in entries:
            fp = entry.fingerprint
            bucket, field = (fp[:2].hex(), fp[2:8]) if fp is not None else ("", b"")
            priority = max(-MAX_PRIORITY, min(MAX_PRIORITY, entry.priority))
            args += [bucket, field, priority, entry.payload]
        args.append(len(acks))
        for ack in acks:
            args += [ack.id, ack.token]
        args.append(len(failures))
        for failure in failures:
            retry_in = "" if failure.retry_in is None else repr(max(0.0, failure.retry_in))
            args += [failure.lease.id, failure.lease.token, failure.reason, retry_in, failure.attempt]
        args.append(1 if seeded else 0)
        args.append(len(rechecks or ()))
        for recheck in rechecks or ():
            args += [recheck.lease.id, recheck.lease.token, repr(max(0.0, recheck.due_in)), recheck.state]
        args += [writer, floor]
        keys = self._k("queue", "payloads", "counters", "owner", "expiry", "attempts", "failed", "state",
                       "delayed", "score", "history", "scheduled", "validators", "lost", "writes")
        queued, refused, writes, regressed = self._scripts["COMMIT"](keys=keys, args=args)
        return Committed(int(queued), int(refused), int(writes), bool(regressed))

    def lease(self, node: str, count: int, lease_seconds: float, fresh_only: bool = False) -> list[Leased]:
        keys = self._k("queue", "payloads", "owner", "expiry", "attempts", "delayed", "score", "history",
                       "scheduled", "validators", "counters", "lost")
        tokens = [_token() for _ in range(count)]
        flat = self._scripts["LEASE"](keys=keys, args=[f"{self.prefix}:leases:", node, count, lease_seconds,
                                                        int(fresh_only), *tokens])
        return [Leased(int(flat[i]), flat[i + 1].decode(), int(flat[i + 2]), int(flat[i + 3]),
                       lost=int(flat[i + 6]), tries=count_tries(flat[i + 4]), state=flat[i + 5].decode())
                for i in range(0, len(flat), 7)]

    def _requeue(self, mode: str, *args: Any) -> tuple[int, list[int], bool]:
        moved, gone, taken = self._scripts["REQUEUE"](
            keys=self._k("queue", "owner", "expiry", "attempts", "lost", "nodes", "trying"),
            args=[f"{self.prefix}:leases:", mode, *args])
        return int(moved), [int(i) for i in gone], bool(taken)

    def release(self, leases: list[Lease]) -> int:
        moved = 0
        for start in range(0, len(leases), 500):
            moved += self._requeue("leases", *_pairs(leases[start:start + 500]))[0]
        return moved

    def renew(self, node: str, leases: list[Lease], lease_seconds: float) -> list[Lease]:
        if not leases:
            return []
        gone = self._scripts["RENEW"](keys=self._k("expiry", "owner", "attempts"),
                                      args=[node, lease_seconds, *_pairs(leases)])
        return [leases[int(k)] for k in gone]

    def reconcile(self, node: str, held: list[Lease], token: str = "") -> Reconciled:
        released, gone, taken = self._requeue("reconcile", node, token, *_pairs(held))
        if taken:
            return Reconciled(0, list(held), taken=True)
        return Reconciled(released, [held[k] for k in gone])  # gone: positions in held

    def leases_of(self, node: str) -> list[Lease]:
        ids = sorted(int(i) for i in self.r.smembers(f"{self.prefix}:leases:{node}"))
        owners = self.r.hmget(self.keys["owner"], [str(i) for i in ids]) if ids else []
        tokens = self.r.hmget(self.keys["attempts"], [str(i) for i in ids]) if ids else []
        return [Lease(i, int(_owner_token(o) or t or 0)) for i, o, t in zip(ids, owners, tokens) if o is not None]

    def try_alone(self, node: str, lease: Lease | None) -> None:
        if lease is None:
            self.r.hdel(self.keys["trying"], node)
        else:
            self.r.hset(self.keys["trying"], node, f"{lease.id}|{lease.token}")

    def reclaim_expired(self) -> int:
        return self._requeue("expired", "")[0]

    def reclaim_node(self, node: str) -> int:
        return self._requeue("node", node)[0]

    def is_seen(self, fingerprint: bytes) -> bool:
        return bool(self.r.hexists(f"{self.prefix}:seen:{fingerprint[:2].hex()}", fingerprint[2:8]))

    def _snapshot(self, detail: int) -> Snapshot:
        raw = self._scripts["SNAPSHOT"](keys=self._k(*Snapshot.KEYS), args=[self.prefix, detail])
        return Snapshot.parse(raw)

    def counts(self) -> Counts:
        snap = self._snapshot(COUNTS)
        leased: dict[str, int] = Counter(node for node, _ in snap.owners.values())
        state = snap.state
        return Counts(queued=snap.ready + snap.delayed, waiting=snap.waiting, due=snap.due, leased=dict(leased),
                      done=snap.counter("done") - snap.due, scheduled=snap.scheduled - snap.due,
                      due_within_hour=snap.soon, failed=snap.counter("failed"), seen=snap.counter("seen"),
                      status=state.get("status") or "new",
                      seeded="seeded" in state or "started" in state,  # "started": crawls before 0.2
                      start_claim=state.get("start_claim", ""))

    def states(self) -> dict[int, EntryState]:
        snap = self._snapshot(STATES)
        found = {i: EntryState(FAILED) for i in snap.failed_ids}
        for ids, name in ((snap.queue_ids, QUEUED), (snap.delayed_ids, WAITING), (snap.scheduled_ids, SCHEDULED)):
            found.update({i: EntryState(name, snap.lost.get(i, 0)) for i in ids})
        for i, (node, token) in snap.owners.items():
            found[i] = EntryState(LEASED, snap.lost.get(i, 0), node, token)
        return found

    def failures(self, limit: int = 100) -> list[tuple[str, str]]:
        rows = [json.loads(raw) for raw in self.r.lrange(self.keys["failed"], 0, limit - 1)]
        return [(row["payload"], row["reason"]) for row in rows]

    def dead_letters(self) -> list[DeadLetter]:
        letters = [json.loads(raw) for raw in reversed(self.r.lrange(self.keys["failed"], 0, -1))]
        return [DeadLetter(int(row["id"]), row["payload"], row["reason"], float(row["at"]),
                           parse_history(json.dumps(row.get("history") or [])),
                           _priority(row.get("score"), int(row["id"])))
                for row in letters]

    def requeue_failed(self, ids: list[int]) -> int:
        marker = json.dumps({"at": self.now(), "outcome": REQUEUED})
        keys = self._k("queue", "payloads", "counters", "attempts", "failed", "history", "state")
        return int(self._scripts["REQUEUE_FAILED"](keys=keys, args=[marker, *(str(i) for i in ids)]))

    def claim_start(self, token: str, replace_token: str) -> bool:
        return bool(self._scripts["CLAIM_START"](keys=self._k("state"), args=[token, replace_token]))

    def begin_reset(self, expected_status: str, expected_owner: str = "") -> bool:
        owner = secrets.token_hex(8)
        if not self._scripts["BEGIN_RESET"](keys=self._k("state"), args=[expected_status, expected_owner, owner]):
            return False
        self._reset_by = owner
        return True

    def reset_owner(self) -> str:
        owner = self.r.hget(self.keys["state"], "reset_by")
        return owner.decode() if owner else ""

    def set_status(self, status: str) -> None:
        self.r.hset(self.keys["state"], "status", status)

    def nodes(self) -> dict[str, NodeInfo]:
        found = {}
        for node, raw in self.r.hgetall(self.keys["nodes"]).items():
            info = json.loads(raw)
            found[node.decode()] = NodeInfo(info["host"], int(info["pid"]), info["token"], float(info["heartbeat"]))
        return found

    def claim_node(self, node: str, info: NodeInfo, replace_token: str | None) -> bool:
        payload = json.dumps({"host": info.host, "pid": info.pid, "token": info.token})
        return bool(self._scripts["CLAIM_NODE"](keys=self._k("nodes"), args=[node, payload, replace_token or ""]))

    def heartbeat(self, node: str, token: str) -> bool:
        return bool(self._scripts["HEARTBEAT"](keys=self._k("nodes"), args=[node, token, 0]))

    def leave(self, node: str, token: str) -> None:
        self._scripts["HEARTBEAT"](keys=self._k("nodes"), args=[node, token, 1])

    def verify(self) -> list[str]:
        return self._snapshot(VERIFY).problems()

    def reset(self) -> bool:
        """Delete every key of the crawl; ``P:state`` last, so a "resetting" status stays
        visible to other starting nodes until the crawl is really empty. Each batch is deleted only
        while this handle's reset still owns ``P:state`` (when it began one)."""
        state = self.keys["state"].encode()
        batch: list[bytes] = []
        for key in self.r.scan_iter(match=f"{self.prefix}:*", count=1000):
            if key != state:
                batch.append(key)
            if len(batch) >= 1000:
                if not self._scripts["RESET_BATCH"](keys=[state, *batch], args=[self._reset_by]):
                    return False
                batch = []
        if not self._scripts["RESET_BATCH"](keys=[state, *batch, state], args=[self._reset_by]):
            return False
        self._reset_by = ""
        return True


def _priority(score: object, frontier_id: int) -> int:
    """The priority a queue score (``-priority * 2**40 + id``) stands for."""
    if score is None or score == "":
        return 0
    return round((frontier_id - float(str(score))) / 2**40)


def _token() -> int:
    """A lease token: random, so a store restored from an older snapshot never repeats a live one."""
    return secrets.randbits(52)


def _pairs(leases: list[Lease]) -> list[int]:
    return [v for lease in leases for v in (lease.id, lease.token)]


def _owner_token(owner: bytes | None) -> str | None:
    parts = owner.decode().rsplit("|", 2) if owner else []
    return parts[2] if len(parts) == 3 else None
