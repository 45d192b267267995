"""Politeness shared through Redis: every node's token bucket and slots for a host, in Lua.

Keys (H = ``RECORDHOUND_REDIS_PREFIX:hosts:{host}``, braces included: the host is the hash tag, so
both keys of a host share a Redis Cluster slot; shared by every crawl of that host):

    H          HASH  tokens, stamp (Redis clock), rate (current adaptive rate), usual (latency), cut_at,
                     held_at (a request last waited for a token), and learned (a crawl with no configured
                     rate whose host answered 429): ceiling, grown_at (its last 429 or growth)
    H:slots    ZSET  "crawl:node|n" -> expiry: requests in flight; an expired slot is free again

and, per holder (one node of one crawl), ``RECORDHOUND_REDIS_PREFIX:{crawl}:slots-held:{node}`` (in
the crawl's slot), a SET of the hosts it took slots of: a dead node's slots are freed by reading its
own set (never by scanning the keyspace), one host at a time. The set is written before the first
acquire of a host (and again every ``HOSTS_REFRESH_SECONDS``), outside the acquire script: a host
listed but never acquired costs nothing, and a slot's own expiry bounds anything missed. Every key
expires an hour after its last use.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis

from recordhound.frontier import politeness as p
from recordhound.frontier.politeness import HostLimiter, Limits

KEY_TTL_SECONDS = 3600
HOSTS_REFRESH_SECONDS = KEY_TTL_SECONDS / 4  # a holder's set of hosts is refreshed this often while used

# KEYS: bucket slots   ARGV: rate concurrency slot slot_ttl key_ttl pace_share   (rate 0: none configured,
# then the learned ceiling's, if any, times pace_share)
ACQUIRE = """
local now = redis.call('TIME')
local clock = tonumber(now[1]) + tonumber(now[2]) / 1e6
local configured, concurrency = tonumber(ARGV[1]), tonumber(ARGV[2])
if concurrency > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', clock)
  if redis.call('ZCARD', KEYS[2]) >= concurrency then return '-1' end
end
if configured <= 0 then configured = (tonumber(redis.call('HGET', KEYS[1], 'ceiling')) or 0) * tonumber(ARGV[6]) end
if configured > 0 then
  local b = redis.call('HMGET', KEYS[1], 'tokens', 'stamp', 'rate')
  local rate = tonumber(b[3]) or configured
  if rate > configured or rate <= 0 then rate = configured end
  local tokens = tonumber(b[1]) or 1
  local stamp = tonumber(b[2]) or clock
  tokens = math.min(1, tokens + math.max(0, clock - stamp) * rate)
  if tokens < 1 then
    redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'stamp', tostring(clock), 'held_at', tostring(clock))
    redis.call('EXPIRE', KEYS[1], ARGV[5])
    return tostring((1 - tokens) / rate)
  end
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'stamp', tostring(clock))
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
if concurrency > 0 then
  redis.call('ZADD', KEYS[2], clock + tonumber(ARGV[4]), ARGV[3])
  redis.call('EXPIRE', KEYS[2], ARGV[5])
end
return '0'
"""


# KEYS: bucket   ARGV: configured status latency key_ttl  + the constants of politeness.next_rate
#   + sent_rate, the constants of politeness.next_learned  (configured 0: the learned rule)
FEEDBACK = """
local now = redis.call('TIME')
local clock = tonumber(now[1]) + tonumber(now[2]) / 1e6
local configured, status, latency = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local cut, slow, raise, floor_share, cooldown, slow_times, slow_min =
  tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]),
  tonumber(ARGV[10]), tonumber(ARGV[11])
local sent, learned_floor, learn_status = tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14])
local growth, growth_step = tonumber(ARGV[15]), tonumber(ARGV[16])
local quiet, demand = tonumber(ARGV[17]), tonumber(ARGV[18])
local b = redis.call('HMGET', KEYS[1], 'rate', 'usual', 'cut_at', 'ceiling', 'grown_at', 'held_at')
local throttled = status == 429 or status == 503
local usual, cut_at = tonumber(b[2]) or 0, tonumber(b[3]) or 0
local is_slow = usual > 0 and latency > math.max(slow_min, usual * slow_times)
local rate, floor
if configured > 0 then
  rate = tonumber(b[1]) or configured
  if rate > configured then rate = configured end
  floor = configured * floor_share
else
  local ceiling = tonumber(b[4]) or 0
  if ceiling <= 0 then
    if status ~= learn_status then return '0' end
    ceiling = math.max(learned_floor, sent)
    rate = ceiling
  else
    rate = tonumber(b[1]) or ceiling
  end
  local grown_at, held_at = tonumber(b[5]) or 0, tonumber(b[6]) or 0
  if status == learn_status then
    if clock - cut_at >= cooldown then ceiling = math.max(learned_floor, math.min(ceiling, rate)) end
    redis.call('HSET', KEYS[1], 'grown_at', tostring(clock))
  elseif not throttled and not is_slow and rate >= ceiling and clock - cut_at >= quiet
      and clock - held_at <= demand then
    ceiling = ceiling * (1 + growth * math.min(clock - grown_at, growth_step))
    redis.call('HSET', KEYS[1], 'grown_at', tostring(clock))
  end
  if rate > ceiling then rate = ceiling end
  redis.call('HSET', KEYS[1], 'ceiling', tostring(ceiling))
  configured, floor = ceiling, learned_floor
end
local new = rate
if throttled then
  if clock - cut_at >= cooldown then new = math.max(floor, rate * cut) end
elseif is_slow then
  if clock - cut_at >= cooldown then new = math.max(floor, rate * slow) end
else
  new = math.min(configured, rate + configured * raise)
end
if new < rate then redis.call('HSET', KEYS[1], 'cut_at', tostring(clock)) end
if not throttled then
  if usual == 0 then usual = latency else usual = 0.9 * usual + 0.1 * latency end
  redis.call('HSET', KEYS[1], 'usual', tostring(usual))
end
redis.call('HSET', KEYS[1], 'rate', tostring(new))
redis.call('EXPIRE', KEYS[1], ARGV[4])
return tostring(new)
"""

# KEYS: slots (of one host)   ARGV: holder slot_ttl key_ttl slot...   (the holder's slots of this host
# made exactly the slots given: the others removed, the missing ones added with a fresh expiry; no slot
# given: a holder that is gone or leaves, all its slots of this host freed; O(slots))
RESYNC_HOLDER = """
local now = redis.call('TIME')
local clock = tonumber(now[1]) + tonumber(now[2]) / 1e6
local mine, keep = ARGV[1] .. '|', {}
for i = 4, #ARGV do keep[ARGV[i]] = true end
for _, slot in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(slot, 1, #mine) == mine and not keep[slot] then redis.call('ZREM', KEYS[1], slot) end
end
for i = 4, #ARGV do
  if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then redis.call('ZADD', KEYS[1], clock + tonumber(ARGV[2]), ARGV[i]) end
end
if #ARGV >= 4 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
return 0
"""


class RedisLimiter(HostLimiter):
    def __init__(self, client: redis.Redis | Callable[[], redis.Redis], prefix: str, slot_ttl: float) -> None:
        """``client``: a client, or what makes one at the first call (a cluster client connects as it is
        made, and a crawl that learns rates only may never need one)."""
        self._client: redis.Redis | None = None if callable(client) else client
        self._connect: Callable[[], redis.Redis] | None = client if callable(client) else None
        self.root, self.prefix, self.slot_ttl = prefix, f"{prefix}:hosts", slot_ttl
        self._listed: dict[tuple[str, str], float] = {}  # (holder, host) -> when its set last named the host
        self._scripts: dict[str, Any] = {}

    @property
    def r(self) -> redis.Redis:
        if self._client is None:
            assert self._connect is not None
            self._client = self._connect()
        return self._client

    def _script(self, name: str, source: str) -> Any:
        if name not in self._scripts:
            self._scripts[name] = self.r.register_script(source)
        return self._scripts[name]

    def _keys(self, host: str) -> list[str]:
        return [f"{self.prefix}:{{{host}}}", f"{self.prefix}:{{{host}}}:slots"]

    def _held(self, holder: str) -> str:
        """A holder "crawl:node" keeps its set in the crawl's slot."""
        crawl, sep, node = holder.rpartition(":")
        return f"{self.root}:{{{crawl}}}:slots-held:{node}" if sep else f"{self.root}:{{{holder}}}:slots-held"

    def _list_host(self, holder: str, host: str) -> None:
        now = time.monotonic()
        if now - self._listed.get((holder, host), -HOSTS_REFRESH_SECONDS) < HOSTS_REFRESH_SECONDS:
            return
        with self.r.pipeline(transaction=False) as pipe:
            pipe.sadd(self._held(holder), host)
            pipe.expire(self._held(holder), KEY_TTL_SECONDS)
            pipe.execute()
        self._listed[(holder, host)] = now

    def acquire(self, host: str, slot: str, limits: Limits) -> float:
        if limits.concurrency > 0:
            self._list_host(p.holder_of(slot), host)
        wait = float(self._script("acquire", ACQUIRE)(keys=self._keys(host), args=[
            repr(limits.pace), limits.concurrency, slot, repr(self.slot_ttl), KEY_TTL_SECONDS, p.PACE_SHARE]))
        return p.FULL if wait < 0 else wait

    def release(self, host: str, slot: str) -> None:
        self.r.zrem(self._keys(host)[1], slot)

    def feedback(self, host: str, limits: Limits, status: int | None, latency: float, sent_rate: float = 0.0) -> None:
        if not limits.adaptive:
            return
        constants: list[Any] = [p.CUT_FACTOR, p.SLOW_FACTOR, p.RAISE_SHARE, p.FLOOR_SHARE, p.CUT_COOLDOWN_SECONDS,
                                p.SLOW_FACTOR_OF_USUAL, p.SLOW_MIN_SECONDS, repr(sent_rate), p.LEARNED_FLOOR_RPS,
                                p.LEARN_STATUS, p.CEILING_GROWTH_SHARE, p.CEILING_GROWTH_STEP_SECONDS,
                                p.CEILING_QUIET_SECONDS, p.CEILING_DEMAND_SECONDS]
        self._script("feedback", FEEDBACK)(keys=self._keys(host)[:1], args=[
            repr(limits.requests_per_second), status or 0, repr(latency), KEY_TTL_SECONDS, *constants])

    def learned(self, hosts: list[str]) -> set[str]:
        """One round trip for all ``hosts`` (the gate asks at most once a ``LEARNED_CHECK_SECONDS``)."""
        with self.r.pipeline(transaction=False) as pipe:
            for host in hosts:
                pipe.hexists(self._keys(host)[0], "ceiling")
            found = pipe.execute()
        return {host for host, exists in zip(hosts, found) if exists}

    def ceiling(self, host: str) -> float:
        value = self.r.hget(self._keys(host)[0], "ceiling")
        return float(value) if value else 0.0

    def forget_holder(self, holder: str) -> None:
        held = self._held(holder)
        for host in self.r.smembers(held):
            self._set_slots(holder, host.decode(), [])
        self.r.delete(held)

    def resync_holder(self, holder: str, held: dict[str, str]) -> None:
        hosts = {host.decode() for host in self.r.smembers(self._held(holder))} | set(held.values())
        for listed in [key for key in self._listed if key[0] == holder]:
            del self._listed[listed]  # the set naming its hosts may be older too: listed again at the next acquire
        for host in hosts:
            mine = [slot for slot, of in held.items() if of == host]
            if mine:
                self._list_host(holder, host)
            self._set_slots(holder, host, mine)

    def _set_slots(self, holder: str, host: str, slots: list[str]) -> None:
        self._script("resync", RESYNC_HOLDER)(keys=self._keys(host)[1:],
                                               args=[holder, repr(self.slot_ttl), KEY_TTL_SECONDS, *slots])

    def rate(self, host: str) -> float:
        value = self.r.hget(self._keys(host)[0], "rate")
        return float(value) if value else 0.0

    def in_flight(self, host: str) -> int:
        return int(self.r.zcard(self._keys(host)[1]))

    def hosts(self) -> dict[str, tuple[int, float]]:
        """Every host with politeness state: (requests in flight, current rate; 0: none adapted)."""
        names = {key.decode()[len(self.prefix) + 1:].removesuffix(":slots").strip("{}")
                 for key in self.r.scan_iter(match=f"{self.prefix}:*", count=1000)}
        return {host: (self.in_flight(host), self.rate(host)) for host in sorted(names)}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
