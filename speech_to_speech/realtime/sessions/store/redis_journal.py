"""A session's replay journal in Redis, with :class:`MemoryJournal`'s answers.

Three keys per session: a hash (held bytes, floor, last seq), a list of
``"seq at size"`` heads and a list of the frames' texts, in seq order.
Every operation is one Lua script, so it is atomic and one round trip; it
trims by bytes and by age as the memory journal does, with the writer's
wall clock (replicas share no monotonic clock). ``gap``: every seq up to
it is known lost (a write that was dropped or failed, or a journal that
Redis no longer has), so a resume from before it is told to resync rather
than silently missing an event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from speech_to_speech.realtime.connection.frames import Frame
from speech_to_speech.realtime.sessions.journal import Replay

_SCRIPT = """
local meta, heads, texts = KEYS[1], KEYS[2], KEYS[3]
local op, now, max_bytes, ttl, keep_ms = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]),
  tonumber(ARGV[5])
local bytes = tonumber(redis.call('HGET', meta, 'bytes') or '0')
local floor = tonumber(redis.call('HGET', meta, 'floor') or '0')
local last = tonumber(redis.call('HGET', meta, 'last') or '0')
local function drop_oldest()
  local head = redis.call('LPOP', heads)
  redis.call('LPOP', texts)
  local seq, at, size = string.match(head, '(%d+) (%S+) (%d+)')
  bytes = bytes - tonumber(size)
  floor = tonumber(seq)
end
local function oldest()
  local head = redis.call('LINDEX', heads, 0)
  if not head then return nil end
  local seq, at = string.match(head, '(%d+) (%S+)')
  return tonumber(seq), tonumber(at)
end
local function trim()
  while true do
    local seq, at = oldest()
    if seq == nil or (bytes <= max_bytes and at >= now - ttl) then break end
    drop_oldest()
  end
end
local result = 0
if op == 'append' then
  local seq, gap = tonumber(ARGV[6]), tonumber(ARGV[8])
  if seq <= last then return -1 end
  -- a journal with nothing yet whose first event is not 1 lost the events before it (Redis restarted)
  if last == 0 and gap < seq - 1 then gap = seq - 1 end
  while gap > floor do
    local first = oldest()
    if first == nil or first > gap then floor = gap; break end
    drop_oldest()
  end
  last = seq
  redis.call('RPUSH', heads, ARGV[6] .. ' ' .. ARGV[2] .. ' ' .. ARGV[9])
  redis.call('RPUSH', texts, ARGV[7])
  bytes = bytes + tonumber(ARGV[9])
  trim()
elseif op == 'ack' then
  local upto = tonumber(ARGV[6])
  while true do
    local seq = oldest()
    if seq == nil or seq > upto then break end
    drop_oldest()
  end
elseif op == 'after' then
  trim()
  local cursor = tonumber(ARGV[6])
  local found = redis.call('LRANGE', heads, 0, -1)
  local start = #found
  for i, head in ipairs(found) do
    if tonumber(string.match(head, '(%d+)')) > cursor then start = i - 1; break end
  end
  result = {floor, last, redis.call('LRANGE', texts, start, -1)}
end
redis.call('HSET', meta, 'bytes', bytes, 'floor', floor, 'last', last)
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, keep_ms) end
return result
"""


@dataclass(frozen=True)
class SessionKeys:
    """Every key of one session; the ``{id}`` hash tag keeps them in one Redis Cluster slot."""

    session_id: str

    def _key(self, name: str) -> str:
        return f"s2s:{{{self.session_id}}}:{name}"

    @property
    def journal(self) -> list[str]:
        return [self._key("journal"), self._key("heads"), self._key("texts")]

    @property
    def state(self) -> str:
        return self._key("state")

    @property
    def owner(self) -> str:
        return self._key("owner")

    @property
    def all(self) -> list[str]:
        return [*self.journal, self.state, self.owner]


def frame_of(text: str) -> Frame:
    """A journaled frame read back: its type and seq are in its text."""
    event = json.loads(text)
    return Frame(text, str(event.get("type")), event.get("server_event_seq"))


class RedisJournal:
    """One session's journal in Redis; ``keep_s``: how long its keys outlive the last write."""

    def __init__(self, redis: Redis, session_id: str, max_bytes: int, ttl_s: float, keep_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.redis = redis
        self.keys = SessionKeys(session_id)
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self.keep_ms = max(1, int(keep_s * 1000))
        self._clock = clock
        self._script = redis.register_script(_SCRIPT)

    def _args(self, op: str, *rest: Any) -> list[Any]:
        return [op, repr(self._clock()), self.max_bytes, repr(self.ttl_s), self.keep_ms, *rest]

    async def append_to(self, pipe: Pipeline, seq: int, frame: Frame, gap: int = 0) -> None:
        """Queue the append on ``pipe`` (the writer batches many in one round trip; no I/O here)."""
        await self._script(self.journal_keys, self._args("append", seq, frame.text, gap, frame.size), client=pipe)

    async def ack_to(self, pipe: Pipeline, seq: int) -> None:
        await self._script(self.journal_keys, self._args("ack", seq), client=pipe)

    @property
    def journal_keys(self) -> list[str]:
        return self.keys.journal

    async def append(self, seq: int, frame: Frame, gap: int = 0) -> None:
        result = await self._script(self.journal_keys, self._args("append", seq, frame.text, gap, frame.size))
        if result == -1:
            raise ValueError(f"server_event_seq {seq} is not above the journal's last")

    async def ack(self, seq: int) -> None:
        await self._script(self.journal_keys, self._args("ack", seq))

    async def read(self, seq: int) -> tuple[Replay, int, int]:
        """The frames above ``seq`` and whether that is all of them; the journal's floor and last seq."""
        floor, last, texts = await self._script(self.journal_keys, self._args("after", seq))
        frames = tuple(frame_of(text.decode() if isinstance(text, bytes) else text) for text in texts)
        return Replay(frames, complete=seq >= int(floor)), int(floor), int(last)

    async def after(self, seq: int) -> Replay:
        replay, _, _ = await self.read(seq)
        return replay

    async def held_bytes(self) -> int:
        return int(await self.redis.hget(self.journal_keys[0], "bytes") or 0)

    async def close(self) -> None:
        await self.redis.delete(*self.journal_keys)
