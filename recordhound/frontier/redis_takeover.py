"""Taking over a Redis crawl stored under the key names of before hash tags.

Until 0.x a crawl's keys were ``PREFIX:crawl:...``; they are ``PREFIX:{crawl}:...`` now (one hash
slot per crawl, so a Redis Cluster can hold it). When a node opens a crawl whose new ``P:state``
does not exist but the old one does, one Lua script renames every old key to its new name
(atomically: another node opening at the same moment finds the new names, or renames nothing).
Old names only ever existed on a single server (a cluster refused their cross-slot scripts), so
nothing is taken over on a cluster. Nodes of the old version must be stopped first: one that
keeps writing under the old names after the take-over writes into a crawl nobody reads.
"""

from __future__ import annotations

import logging
import re

import redis

logger = logging.getLogger(__name__)

# KEYS: none (old names only exist on a single server)   ARGV: old_prefix new_prefix old_key...
RENAME_ALL = """
if redis.call('EXISTS', ARGV[2] .. ':state') == 1 then return 0 end
local moved = 0
for j = 3, #ARGV do
  local old = ARGV[j]
  if redis.call('EXISTS', old) == 1 then
    redis.call('RENAME', old, ARGV[2] .. string.sub(old, #ARGV[1] + 1))
    moved = moved + 1
  end
end
return moved
"""


def old_prefix(prefix: str) -> str | None:
    """``PREFIX:crawl`` for a tagged ``PREFIX:{crawl}``; None for any other prefix."""
    head, sep, tail = prefix.rpartition(":{")
    return f"{head}:{tail[:-1]}" if sep and tail.endswith("}") else None


def take_over(client: redis.Redis, prefix: str) -> int:
    """Rename the crawl's keys of before to the tagged names, once. Returns how many keys moved."""
    old = old_prefix(prefix)
    if old is None or client.exists(f"{prefix}:state") or not client.exists(f"{old}:state"):
        return 0
    pattern = re.sub(r"([*?\[\]\\])", r"\\\1", old) + ":*"
    keys = [key.decode() for key in client.scan_iter(match=pattern, count=1000)]
    keys = [key for key in keys if ":" not in key[len(old) + 1:] or _own(key[len(old) + 1:])]
    moved = int(client.register_script(RENAME_ALL)(keys=[], args=[old, prefix, *keys]))
    if moved:
        logger.warning("Redis crawl %s: %d keys of before hash tags renamed to %s:*", old, moved, prefix)
    return moved


def _own(rest: str) -> bool:
    """Whether a key's part after the old prefix is one of the crawl's (not another crawl ``crawl:x``)."""
    return rest.split(":", 1)[0] in ("seen", "leases")
