"""One consistent read of a Redis crawl: ``counts``, ``states`` and ``verify`` see a single
moment of the store (one Lua script), never a torn mix of before and after another node's write.

``detail`` STATES adds every stored id by state and the lost counts (what ``states`` needs);
VERIFY adds what only ``verify`` needs (the seen-set size, lease-set membership, duplicate
requests). Both are O(entries) (VERIFY also walks the 65,536 seen buckets): for operators and
tests, not for the crawl's tick.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

# KEYS: queue delayed scheduled owner expiry payloads counters state failed history score validators lost
# ARGV: prefix detail (0 COUNTS, 1 STATES, 2 VERIFY)
COUNTS, STATES, VERIFY = 0, 1, 2
SNAPSHOT = """
local now = redis.call('TIME')
local clock = tonumber(now[1]) + tonumber(now[2]) / 1e6
local out = {
  ready = redis.call('ZCARD', KEYS[1]), delayed = redis.call('ZCARD', KEYS[2]),
  waiting = redis.call('ZCOUNT', KEYS[2], '(' .. clock, '+inf'),
  due = redis.call('ZCOUNT', KEYS[3], '-inf', clock), scheduled = redis.call('ZCARD', KEYS[3]),
  soon = redis.call('ZCOUNT', KEYS[3], '(' .. clock, clock + 3600),
  owners = redis.call('HGETALL', KEYS[4]), counters = redis.call('HGETALL', KEYS[7]),
  state = redis.call('HGETALL', KEYS[8]),
}
if ARGV[2] ~= '0' then
  out.queue = redis.call('ZRANGE', KEYS[1], 0, -1)
  out.delayed_ids = redis.call('ZRANGE', KEYS[2], 0, -1)
  out.scheduled_ids = redis.call('ZRANGE', KEYS[3], 0, -1)
  out.lost = redis.call('HGETALL', KEYS[13])
  local failed = {}
  for _, raw in ipairs(redis.call('LRANGE', KEYS[9], 0, -1)) do failed[#failed + 1] = tostring(cjson.decode(raw).id) end
  out.failed = failed
end
if ARGV[2] == '2' then
  out.expiry = redis.call('ZRANGE', KEYS[5], 0, -1)
  out.payloads = redis.call('HKEYS', KEYS[6])
  out.history = redis.call('HKEYS', KEYS[10])
  out.score = redis.call('HKEYS', KEYS[11])
  out.validators = redis.call('HKEYS', KEYS[12])
  local seen = 0
  for b = 0, 65535 do seen = seen + redis.call('HLEN', ARGV[1] .. ':seen:' .. string.format('%04x', b)) end
  out.seen = seen
  local unlisted = {}
  for j = 1, #out.owners, 2 do
    local node = string.match(out.owners[j + 1], '^(.*)|[^|]*|[^|]*$') or string.match(out.owners[j + 1], '^(.*)|')
    if redis.call('SISMEMBER', ARGV[1] .. ':leases:' .. node, out.owners[j]) == 0 then
      unlisted[#unlisted + 1] = out.owners[j]
    end
  end
  out.unlisted = unlisted
  local counts, duplicates = {}, {}
  for _, payload in ipairs(redis.call('HVALS', KEYS[6])) do counts[payload] = (counts[payload] or 0) + 1 end
  for payload, n in pairs(counts) do
    if n > 1 then duplicates[#duplicates + 1] = {string.sub(payload, 1, 120), n} end
  end
  out.duplicates = duplicates
end
return cjson.encode(out)
"""


def _ids(raw: Any) -> set[int]:
    return {int(i) for i in raw} if isinstance(raw, list) else set()


def _pairs(raw: Any) -> dict[str, str]:
    flat = raw if isinstance(raw, list) else []
    return dict(zip(flat[::2], flat[1::2]))


def _owner(value: str) -> tuple[str, int]:
    """(node, token) of an owner value "node|score|token" (an old "node|score": token 0)."""
    parts = value.rsplit("|", 2)
    return (parts[0], int(parts[2])) if len(parts) == 3 else (value.rsplit("|", 1)[0], 0)


@dataclass
class Snapshot:
    KEYS: ClassVar[tuple[str, ...]] = ("queue", "delayed", "scheduled", "owner", "expiry", "payloads", "counters",
                                       "state", "failed", "history", "score", "validators", "lost")

    ready: int
    delayed: int  # retries waiting out their backoff (queued: the crawl is not drained)
    waiting: int  # of the delayed: whose retry time has not come yet
    due: int
    scheduled: int
    soon: int
    owners: dict[int, tuple[str, int]]  # leased id -> (node, token)
    counters: dict[str, int]
    state: dict[str, str]
    raw: dict[str, Any] = field(default_factory=dict)  # the detailed read (states, verify)

    @classmethod
    def parse(cls, encoded: bytes | str) -> Snapshot:
        raw = json.loads(encoded)
        return cls(int(raw["ready"]), int(raw["delayed"]), int(raw["waiting"]), int(raw["due"]), int(raw["scheduled"]),
                   int(raw["soon"]),
                   {int(i): _owner(v) for i, v in _pairs(raw["owners"]).items()},
                   {k: int(v) for k, v in _pairs(raw["counters"]).items()}, _pairs(raw["state"]), raw)

    def counter(self, name: str) -> int:
        return self.counters.get(name, 0)

    @property
    def queue_ids(self) -> set[int]:
        return _ids(self.raw.get("queue"))

    @property
    def delayed_ids(self) -> set[int]:
        return _ids(self.raw.get("delayed_ids"))

    @property
    def scheduled_ids(self) -> set[int]:
        return _ids(self.raw.get("scheduled_ids"))

    @property
    def failed_ids(self) -> list[int]:
        return [int(i) for i in self.raw.get("failed") or []]

    @property
    def lost(self) -> dict[int, int]:
        return {int(i): int(n) for i, n in _pairs(self.raw.get("lost")).items()}

    def problems(self) -> list[str]:
        """Inconsistencies of the stored state (the checks of ``FrontierBackend.verify``)."""
        queued, delayed, scheduled = self.queue_ids, self.delayed_ids, self.scheduled_ids
        owners, payloads, expiring = set(self.owners), _ids(self.raw.get("payloads")), _ids(self.raw.get("expiry"))
        problems = [f"entry {i} is both queued and waiting for a retry" for i in sorted(queued & delayed)]
        problems += [f"entry {i} is both queued and scheduled for a recheck" for i in sorted((queued | delayed) & scheduled)]
        queued |= delayed | scheduled
        problems += [f"entry {i} is both queued and leased" for i in sorted(queued & owners)]
        problems += [f"entry {i} is queued or leased without its request" for i in sorted((queued | owners) - payloads)]
        problems += [f"entry {i} has a request but is neither queued nor leased" for i in sorted(payloads - queued - owners)]
        problems += [f"entry {i} is leased without an expiry" for i in sorted(owners - expiring)]
        problems += [f"entry {i} has an expiry but no lease" for i in sorted(expiring - owners)]
        problems += [f"entry {i} is leased by {self.owners[int(i)][0]} but not in its lease set"
                     for i in self.raw.get("unlisted") or []]
        return problems + self._counter_problems(payloads, scheduled, delayed)

    def _counter_problems(self, payloads: set[int], scheduled: set[int], delayed: set[int]) -> list[str]:
        problems = []
        issued, done, failed = self.counter("seq"), self.counter("done"), self.counter("failed")
        pending = len(payloads) - len(scheduled & payloads)  # a request kept for a recheck counts as done
        if done + failed + pending != issued:
            problems.append(f"{issued} requests were queued, but done {done} + failed {failed} + "
                            f"in the queue {pending} = {done + failed + pending}")
        if len(self.failed_ids) != failed:
            problems.append(f"the failed counter says {failed}, the failed list holds {len(self.failed_ids)}")
        if self.counter("seen") != int(self.raw.get("seen") or 0):
            problems.append(f"the seen counter says {self.counter('seen')}, the seen-set holds {self.raw.get('seen')}")
        problems += [f"entry {i} has an attempt history but no request" for i in
                     sorted(_ids(self.raw.get("history")) - payloads)]
        problems += [f"entry {i} has a place in line but is not waiting for a retry" for i in
                     sorted(_ids(self.raw.get("score")) - delayed - scheduled)]
        problems += [f"entry {i} has a recheck state but no request" for i in
                     sorted(_ids(self.raw.get("validators")) - payloads)]
        problems += [f"entry {i} has a lost count but no request" for i in sorted(set(self.lost) - payloads)]
        problems += [f"the same request is queued {n} times: {p!r}" for p, n in self.raw.get("duplicates") or []]
        return problems
