"""Lua scripts of the Redis frontier: each multi-step update is one atomic script.

Scores: ``-priority * 2**40 + id`` orders the queue by priority (higher first), then FIFO.
The owner hash keeps "node|score|token" so a returned lease goes back to its place in line and
only its current holder (node and token) can end it. Owners written before tokens were random
read as "node|score" (the token is then the lease count).
"""

# The owner value of a leased entry: node, score, token (nil for an owner of before random tokens).
PARSE_OWNER = """
local function parse_owner(owner)
  local node, score, token = string.match(owner, '^(.*)|([^|]*)|([^|]*)$')
  if node then return node, score, token end
  node, score = string.match(owner, '^(.*)|([^|]*)$')
  return node, score, nil
end
"""

# KEYS: queue payloads counters owner expiry attempts failed state delayed score history scheduled validators lost
#       writes
# ARGV: seen_prefix node_prefix n [bucket field priority payload]*n na [id token]*na
#       nf [id token reason retry_in attempt]*nf seeded(0/1) nr [id token due_in state]*nr
# retry_in "": failed for good (a dead letter); else seconds the entry waits in P:delayed.
# Returns {queued, refused}: refused acks/failures name a lease that is no longer current.
COMMIT = PARSE_OWNER + """
local function drop_lease(id, token, keep)
  local owner = redis.call('HGET', KEYS[4], id)
  if not owner then return nil end
  local attempts = redis.call('HGET', KEYS[6], id)
  local node, score, current = parse_owner(owner)
  if (current or attempts) ~= token then return nil end
  redis.call('HDEL', KEYS[4], id)
  redis.call('ZREM', KEYS[5], id)
  redis.call('SREM', ARGV[2] .. node, id)
  if keep then return '', score, attempts end
  redis.call('HDEL', KEYS[6], id)
  local payload = redis.call('HGET', KEYS[2], id)
  redis.call('HDEL', KEYS[2], id)
  return payload, score, attempts
end
local function appended(id, attempt)
  local history = cjson.decode(redis.call('HGET', KEYS[11], id) or '[]')
  if attempt ~= '' then history[#history + 1] = cjson.decode(attempt) end
  return history
end
-- the last two ARGV: the writer (a node) and the count of its writes it last saw; a store that
-- counts fewer lost some of them (restored from an older snapshot): nothing is applied
local writer, floor = ARGV[#ARGV - 1], tonumber(ARGV[#ARGV])
local writes = tonumber(redis.call('HGET', KEYS[15], writer) or '0')
if writer ~= '' and writes < floor then return {0, 0, writes, 1} end
local i = 3
local n = tonumber(ARGV[i]); i = i + 1
local queued, seen = 0, 0
for _ = 1, n do
  local bucket, field, prio, payload = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  i = i + 4
  local new = true
  if bucket ~= '' then
    new = redis.call('HSETNX', ARGV[1] .. bucket, field, '') == 1
    if new then seen = seen + 1 end
  end
  if new then
    local id = redis.call('HINCRBY', KEYS[3], 'seq', 1)
    redis.call('ZADD', KEYS[1], -prio * 1099511627776 + id, id)
    redis.call('HSET', KEYS[2], id, payload)
    queued = queued + 1
  end
end
if seen > 0 then redis.call('HINCRBY', KEYS[3], 'seen', seen) end
local na = tonumber(ARGV[i]); i = i + 1
local done = 0
for _ = 1, na do
  if drop_lease(ARGV[i], ARGV[i + 1], false) then
    redis.call('HDEL', KEYS[11], ARGV[i])
    redis.call('HDEL', KEYS[13], ARGV[i])
    redis.call('HDEL', KEYS[14], ARGV[i])
    done = done + 1
  end
  i = i + 2
end
local nf = tonumber(ARGV[i]); i = i + 1
local now = redis.call('TIME')
local clock = tonumber(now[1]) + tonumber(now[2]) / 1e6
local failed, retried = 0, 0
for _ = 1, nf do
  local id, token, reason, retry_in, attempt = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  i = i + 5
  local retry = retry_in ~= ''
  local payload, score, attempts = drop_lease(id, token, retry)
  if payload and retry then
    redis.call('HSET', KEYS[11], id, cjson.encode(appended(id, attempt)))
    redis.call('HSET', KEYS[10], id, score)
    redis.call('ZADD', KEYS[9], clock + tonumber(retry_in), id)
    retried = retried + 1
  elseif payload then
    local history = appended(id, attempt)
    redis.call('HDEL', KEYS[11], id)
    redis.call('HDEL', KEYS[13], id)
    redis.call('HDEL', KEYS[14], id)
    redis.call('LPUSH', KEYS[7], cjson.encode({id = id, payload = payload, reason = reason, at = clock,
      history = history, score = score, attempts = attempts}))
    failed = failed + 1
  end
end
if failed > 0 then redis.call('HINCRBY', KEYS[3], 'failed', failed) end
if ARGV[i] == '1' then redis.call('HSET', KEYS[8], 'seeded', '1') end
i = i + 1
local nr = tonumber(ARGV[i]); i = i + 1
local kept = 0
for _ = 1, nr do
  local id, token, due_in, state = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  local payload, score = drop_lease(id, token, true)
  if payload then
    redis.call('HDEL', KEYS[11], id)
    redis.call('HDEL', KEYS[14], id)
    redis.call('HSET', KEYS[10], id, score)
    redis.call('ZADD', KEYS[12], clock + tonumber(due_in), id)
    redis.call('HSET', KEYS[13], id, state)
    kept = kept + 1
  end
end
if done + kept > 0 then redis.call('HINCRBY', KEYS[3], 'done', done + kept) end
if writer ~= '' then writes = redis.call('HINCRBY', KEYS[15], writer, 1) end
return {queued, na + nf + nr - done - failed - retried - kept, writes, 0}
"""

# KEYS: queue payloads owner expiry attempts delayed score history scheduled validators counters lost
# ARGV: node_prefix node count lease_seconds fresh_only token...  (one fresh random token per lease it
# may hand out). Retries (P:delayed) and rechecks (P:scheduled) whose time has come move back to their
# place in the queue first; a recheck is no longer done. fresh_only "1": suspects (P:lost > 0) are
# passed over and keep their place (read in pages of 128 queue entries).
LEASE = """
local now = redis.call('TIME')
local clock = tonumber(now[1]) + tonumber(now[2]) / 1e6
for _, waiting in ipairs({KEYS[6], KEYS[9]}) do
  local due = redis.call('ZRANGEBYSCORE', waiting, '-inf', clock, 'LIMIT', 0, 1000)
  for _, id in ipairs(due) do
    redis.call('ZADD', KEYS[1], redis.call('HGET', KEYS[7], id), id)
    redis.call('ZREM', waiting, id)
    redis.call('HDEL', KEYS[7], id)
  end
  if waiting == KEYS[9] and #due > 0 then redis.call('HINCRBY', KEYS[11], 'done', -#due) end
end
local count, fresh = tonumber(ARGV[3]), ARGV[5] == '1'
local ids, start, step = {}, 0, fresh and 128 or count
while #ids < 2 * count do
  local page = redis.call('ZRANGE', KEYS[1], start, start + step - 1, 'WITHSCORES')
  local lost = {}
  if fresh and #page > 0 then
    local members = {}
    for j = 1, #page, 2 do members[#members + 1] = page[j] end
    lost = redis.call('HMGET', KEYS[12], unpack(members))
  end
  for j = 1, #page, 2 do
    if #ids < 2 * count and tonumber(lost[(j + 1) / 2] or '0') == 0 then
      ids[#ids + 1] = page[j]
      ids[#ids + 1] = page[j + 1]
    end
  end
  if #page < 2 * step then break end
  start = start + step
end
if #ids == 0 then return {} end
local expires = clock + tonumber(ARGV[4])
local out = {}
for j = 1, #ids, 2 do
  local id, score = ids[j], ids[j + 1]
  redis.call('ZREM', KEYS[1], id)
  local token = ARGV[5 + (j + 1) / 2]
  redis.call('HSET', KEYS[3], id, ARGV[2] .. '|' .. score .. '|' .. token)
  redis.call('ZADD', KEYS[4], expires, id)
  redis.call('SADD', ARGV[1] .. ARGV[2], id)
  local attempts = redis.call('HINCRBY', KEYS[5], id, 1)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[2], id)
  out[#out + 1] = attempts
  out[#out + 1] = token
  out[#out + 1] = redis.call('HGET', KEYS[8], id) or ''
  out[#out + 1] = redis.call('HGET', KEYS[10], id) or ''
  out[#out + 1] = redis.call('HGET', KEYS[12], id) or '0'
end
return out
"""

# Dead letters back to the queue. KEYS: queue payloads counters attempts failed history state
# ARGV: requeued_marker_json id...   Returns how many moved.
REQUEUE_FAILED = """
local wanted = {}
for j = 2, #ARGV do wanted[ARGV[j]] = true end
local moved = 0
for _, raw in ipairs(redis.call('LRANGE', KEYS[5], 0, -1)) do
  local letter = cjson.decode(raw)
  local id = tostring(letter.id)
  if wanted[id] then
    local history = letter.history
    if type(history) ~= 'table' then history = {} end
    history[#history + 1] = cjson.decode(ARGV[1])
    redis.call('ZADD', KEYS[1], letter.score or id, id)
    redis.call('HSET', KEYS[2], id, letter.payload)
    redis.call('HSET', KEYS[4], id, letter.attempts or 0)
    redis.call('HSET', KEYS[6], id, cjson.encode(history))
    redis.call('LREM', KEYS[5], 1, raw)
    wanted[id] = nil
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('HINCRBY', KEYS[3], 'failed', -moved)
  if redis.call('HGET', KEYS[7], 'status') == 'completed' then redis.call('HSET', KEYS[7], 'status', 'running') end
end
return moved
"""

# Return leases to the queue. KEYS: queue owner expiry attempts lost nodes trying   ARGV: node_prefix mode arg...
# mode "leases": arg... are id, token pairs (only current leases move: released, no loss counted);
# "node": arg is a node whose process is gone, "expired": every lease past its expiry (both
# expired: the lease its holder was trying alone (P:trying) counts one more in P:lost, the others
# become suspects, lost 1); "reconcile": arg is a node, then the id, token pairs its process
# holds (after the node's registration token: '' = unfenced): the node's other leases are released, and
# the held ones the store no longer has are returned (as their 0-based positions among the pairs); a
# caller that is no longer the node's registered process changes nothing. Returns {moved, gone, taken}.
REQUEUE = PARSE_OWNER + """
local function current_token(id)
  local owner = redis.call('HGET', KEYS[2], id)
  if not owner then return nil, nil end
  local node, score, token = parse_owner(owner)
  return token or redis.call('HGET', KEYS[4], id), node
end
local ids, lost, gone = {}, false, {}
if ARGV[2] == 'leases' then
  for j = 3, #ARGV, 2 do
    if current_token(ARGV[j]) == ARGV[j + 1] then ids[#ids + 1] = ARGV[j] end
  end
elseif ARGV[2] == 'reconcile' then
  if ARGV[4] ~= '' then  -- fenced: a process registered as this node under another token owns it now
    local registered = redis.call('HGET', KEYS[6], ARGV[3])
    if registered and cjson.decode(registered).token ~= ARGV[4] then return {0, {}, 1} end
  end
  local held = {}  -- "id|token" of every held pair (a process may name one id with two tokens)
  for j = 5, #ARGV, 2 do
    held[ARGV[j] .. '|' .. ARGV[j + 1]] = true
    local token, node = current_token(ARGV[j])
    if token ~= ARGV[j + 1] or node ~= ARGV[3] then gone[#gone + 1] = (j - 5) / 2 end
  end
  for _, id in ipairs(redis.call('SMEMBERS', ARGV[1] .. ARGV[3])) do
    if not held[id .. '|' .. (current_token(id) or '')] then ids[#ids + 1] = id end
  end
elseif ARGV[2] == 'node' then
  ids, lost = redis.call('SMEMBERS', ARGV[1] .. ARGV[3]), true
elseif ARGV[2] == 'expired' then
  local now = redis.call('TIME')
  ids = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', tonumber(now[1]) + tonumber(now[2]) / 1e6, 'LIMIT', 0, 5000)
  lost = true
end
local moved = 0
for _, id in ipairs(ids) do
  local owner = redis.call('HGET', KEYS[2], id)
  if owner then
    local node, score, token = parse_owner(owner)
    if lost then
      local mark = redis.call('HGET', KEYS[7], node)
      if mark and mark == id .. '|' .. (token or redis.call('HGET', KEYS[4], id) or '') then
        redis.call('HINCRBY', KEYS[5], id, 1)
        redis.call('HDEL', KEYS[7], node)
      elseif (tonumber(redis.call('HGET', KEYS[5], id)) or 0) < 1 then
        redis.call('HSET', KEYS[5], id, 1)
      end
    end
    redis.call('HDEL', KEYS[2], id)
    redis.call('ZREM', KEYS[3], id)
    redis.call('SREM', ARGV[1] .. node, id)
    redis.call('ZADD', KEYS[1], score, id)
    moved = moved + 1
  elseif ARGV[2] == 'node' then
    redis.call('SREM', ARGV[1] .. ARGV[3], id)  -- a stale member (a store restored from a snapshot)
  end
end
if ARGV[2] == 'node' then redis.call('HDEL', KEYS[7], ARGV[3]) end  -- that process is gone: so is its try
return {moved, gone, 0}
"""

# KEYS: expiry owner attempts   ARGV: node lease_seconds id token ...  (renew the leases a process
# holds; returns the 0-based positions of the pairs it no longer holds in the store: by pair, not
# by id, so a stale and the current lease of one entry are told apart)
RENEW = PARSE_OWNER + """
local now = redis.call('TIME')
local expires = tonumber(now[1]) + tonumber(now[2]) / 1e6 + tonumber(ARGV[2])
local gone = {}
for j = 3, #ARGV, 2 do
  local owner = redis.call('HGET', KEYS[2], ARGV[j])
  local node, score, token
  if owner then node, score, token = parse_owner(owner) end
  if owner and node == ARGV[1] and (token or redis.call('HGET', KEYS[3], ARGV[j])) == ARGV[j + 1] then
    redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[j])
  else
    gone[#gone + 1] = (j - 3) / 2
  end
end
return gone
"""

# KEYS: nodes   ARGV: node info_json replace_token
CLAIM_NODE = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current and cjson.decode(current).token ~= ARGV[3] then return 0 end
local info = cjson.decode(ARGV[2])
local now = redis.call('TIME')
info.heartbeat = tonumber(now[1]) + tonumber(now[2]) / 1e6
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(info))
return 1
"""

# KEYS: nodes   ARGV: node token remove(0/1)
HEARTBEAT = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then return 0 end
local info = cjson.decode(current)
if info.token ~= ARGV[2] then return 0 end
if ARGV[3] == '1' then redis.call('HDEL', KEYS[1], ARGV[1]) return 1 end
local now = redis.call('TIME')
info.heartbeat = tonumber(now[1]) + tonumber(now[2]) / 1e6
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(info))
return 1
"""

# KEYS: state   ARGV: token replace_token   (compare-and-set of the start claim)
CLAIM_START = """
if redis.call('HEXISTS', KEYS[1], 'seeded') == 1 or redis.call('HEXISTS', KEYS[1], 'started') == 1 then
  return 0
end
local current = redis.call('HGET', KEYS[1], 'start_claim') or ''
if current ~= ARGV[2] and current ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'start_claim', ARGV[1])
return 1
"""

# KEYS: state   ARGV: expected_status expected_owner owner   (compare-and-set: one node resets a completed
# crawl; from "resetting", the owner seen must still be the owner: one party takes a left-over reset over)
BEGIN_RESET = """
local status = redis.call('HGET', KEYS[1], 'status') or 'new'
if status ~= ARGV[1] then return 0 end
if status == 'resetting' and (redis.call('HGET', KEYS[1], 'reset_by') or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'status', 'resetting', 'reset_by', ARGV[3])
return 1
"""

# KEYS: state key*   ARGV: owner ("": a reset nobody began)   (one batch of a reset, fenced by its owner)
RESET_BATCH = """
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'reset_by') ~= ARGV[1] then return 0 end
if #KEYS > 1 then redis.call('UNLINK', unpack(KEYS, 2)) end
return 1
"""
