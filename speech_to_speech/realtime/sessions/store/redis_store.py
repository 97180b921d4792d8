"""``--session_store redis://…``: sessions that any replica can resume, and that outlive their server.

Ownership is a lease: ``s2s:{id}:owner`` holds the owning replica's id
(``SET NX PX``), renewed by this replica's heartbeat every third of the
lease. A replica that must take a session over publishes its id on the
owner's channel; the owner writes what it has queued, lets the lease go and
closes its socket with ``session.replaced``. Nobody on that channel (the
owner died: Redis saw its connections close) means the lease is taken at
once, and so does the channel emptying after the owner heard (a killed
process takes a while to die, and hears meanwhile); an owner that hears and
stays but does not answer (frozen, or cut off with its connections open)
loses it when it lapses.

Keys live ``keep_s`` after their last renewal (the disconnect grace and
the journal's age, past the lease), so a session whose server died can be
resumed elsewhere within its grace; a server that shuts down leaves them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from speech_to_speech.realtime.sessions.journal import MemoryJournal
from speech_to_speech.realtime.sessions.store.base import SnapshotSource, StoredSession, Takeover
from speech_to_speech.realtime.sessions.store.mirror import MirroredJournal, RedisLink
from speech_to_speech.realtime.sessions.store.redis_journal import RedisJournal, SessionKeys
from speech_to_speech.realtime.sessions.store.state import read_state
from speech_to_speech.realtime.sessions.store.writer import STORE_ERRORS, StoreWriter

log = logging.getLogger(__name__)

# Every Redis call is bounded: a store that does not answer is a store that is down.
TIMEOUT_S = 1.0
# Journal operations waiting for Redis, for all of a replica's sessions, before new ones are dropped.
MAX_QUEUED_WRITES = 4096

# 1: renewed; 2: it had lapsed and is ours again; 0: another replica holds it.
_RENEW = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]); return 1 end
if not holder then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]); return 2 end
return 0
"""
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
_STEAL = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]); return 1
"""
_ROTATE = """
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'token', ARGV[2]); return 1
"""


def _channel(replica_id: str) -> str:
    return f"s2s:replica:{replica_id}"


class RedisStore:
    shared = True

    def __init__(self, url: str, *, lease_s: float = 3.0, keep_s: float = 150.0, max_bytes: int = 4 << 20,
                 ttl_s: float = 120.0, on_write: Callable[[str, int], None] | None = None) -> None:
        self.url = url
        self.replica_id = "r_" + secrets.token_hex(8)
        self.lease_ms = int(lease_s * 1000)
        self.keep_s = keep_s
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self.redis = Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        self.on_write = on_write or (lambda outcome, count: None)
        self.writer = StoreWriter(self.redis, max_ops=MAX_QUEUED_WRITES, timeout_s=TIMEOUT_S,
                                  on_write=lambda outcome, count: self.on_write(outcome, count))
        self._owned: set[str] = set()
        self._beat_now = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._handovers: set[asyncio.Future[None]] = set()
        self._on_takeover: Takeover | None = None
        self._renew = self.redis.register_script(_RENEW)
        self._release = self.redis.register_script(_RELEASE)
        self._steal = self.redis.register_script(_STEAL)
        self._rotate = self.redis.register_script(_ROTATE)

    def journal_of(self, session_id: str) -> RedisJournal:
        return RedisJournal(self.redis, session_id, self.max_bytes, self.ttl_s, self.keep_s)

    # ------------------------------------------------------------ this replica's sessions

    def link(self, session_id: str, journal: MemoryJournal, snapshot: SnapshotSource) -> RedisLink:
        self._ensure_started()
        self.writer.add(session_id, self.journal_of(session_id), snapshot, int(self.keep_s * 1000))
        self._owned.add(session_id)
        self._beat_now.set()  # take the lease of a new session now, not at the next beat
        return RedisLink(session_id, MirroredJournal(journal, self.writer, session_id), self.writer, self._end)

    async def _end(self, session_id: str, keep: bool) -> None:
        self._owned.discard(session_id)
        self.writer.remove(session_id)
        with contextlib.suppress(Exception):
            if keep:
                await self._release(keys=[SessionKeys(session_id).owner], args=[self.replica_id])
            else:
                await self.redis.delete(*SessionKeys(session_id).all)

    async def start(self, on_takeover: Takeover) -> None:
        self._on_takeover = on_takeover
        self._ensure_started()

    def _ensure_started(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(self.writer.run(), name="store-writer"),
                           asyncio.create_task(self._heartbeat(), name="store-heartbeat"),
                           asyncio.create_task(self._listen(), name="store-takeovers")]

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.writer.flush(TIMEOUT_S)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks = []
        with contextlib.suppress(Exception):
            await self.redis.aclose()

    async def reachable(self) -> bool:
        try:
            return bool(await asyncio.wait_for(self.redis.ping(), TIMEOUT_S))
        except STORE_ERRORS:
            return False

    async def _heartbeat(self) -> None:
        interval = self.lease_ms / 3000.0
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._beat_now.wait(), interval)
            self._beat_now.clear()
            owned = list(self._owned)
            if not owned:
                continue
            try:
                pipe = self.redis.pipeline(transaction=False)
                for session_id in owned:
                    keys = SessionKeys(session_id)
                    await self._renew(keys=[keys.owner], args=[self.replica_id, self.lease_ms], client=pipe)
                    for key in keys.all[:-1]:
                        pipe.pexpire(key, int(self.keep_s * 1000))
                results = await asyncio.wait_for(pipe.execute(raise_on_error=False), TIMEOUT_S)
            except STORE_ERRORS as error:
                log.debug("session store heartbeat failed: %r", error)
                continue
            for index, session_id in enumerate(owned):
                self.writer.mark(session_id)  # playback acks move the history without an event
                if results[index * 5] == 2:  # the lease had lapsed: what else of it did the store lose?
                    self.writer.lost(session_id)
                if results[index * 5] == 0 and session_id in self._owned:
                    log.info("session %s: another replica holds its lease", session_id)
                    self._owned.discard(session_id)
                    self._takeover(session_id)

    def _takeover(self, session_id: str) -> None:
        if self._on_takeover is not None:
            task = asyncio.ensure_future(self._on_takeover(session_id))
            self._handovers.add(task)  # held until done: the loop keeps only weak references
            task.add_done_callback(self._handovers.discard)

    async def _listen(self) -> None:
        while True:
            pubsub = self.redis.pubsub()
            try:
                await pubsub.subscribe(_channel(self.replica_id))
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message is not None and message.get("type") == "message":
                        self._takeover(_text(message["data"]))
            except STORE_ERRORS as error:
                log.debug("session store: takeover channel lost (%r); listening again", error)
                await asyncio.sleep(0.5)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    # ------------------------------------------------------------ taking a session over

    async def token_digest(self, session_id: str) -> bytes | None:
        token = await self.redis.hget(SessionKeys(session_id).state, "token")
        return bytes.fromhex(_text(token)) if token else None

    async def claim(self, session_id: str) -> bool:
        owner = SessionKeys(session_id).owner
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lease_ms / 1000.0 + 1.0
        asked: str | None = None
        while True:
            if await self.redis.set(owner, self.replica_id, nx=True, px=self.lease_ms):
                break
            holder = await self.redis.get(owner)
            holder_id = _text(holder) if holder is not None else None
            if holder_id == self.replica_id:
                break
            if holder_id is not None:
                if holder_id != asked:
                    asked = holder_id
                    listening = await self.redis.publish(_channel(asked), session_id)
                else:  # asked already: one that heard and then died (a process takes a while to die) answers nobody
                    listening = await self._listening(asked)
                if not listening and await self._steal(keys=[owner], args=[asked, self.replica_id, self.lease_ms]):
                    log.info("session %s: its replica %s is gone; taken over", session_id, asked)
                    break
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.02)  # the owner is writing its last events and letting go
        return True

    async def _listening(self, replica_id: str) -> int:
        """How many connections listen on the replica's channel (0: it is gone; Redis saw them close)."""
        channel = _channel(replica_id)
        counts = {_text(name): int(count) for name, count in await self.redis.pubsub_numsub(channel)}
        return counts.get(channel, 0)

    async def rotate(self, session_id: str, old: bytes, new: bytes) -> bool:
        return bool(await self._rotate(keys=[SessionKeys(session_id).state], args=[old.hex(), new.hex()]))

    async def release(self, session_id: str) -> None:
        with contextlib.suppress(Exception):
            await self._release(keys=[SessionKeys(session_id).owner], args=[self.replica_id])

    async def load(self, session_id: str) -> StoredSession | None:
        fields = {_text(k): _text(v) for k, v in (await self.redis.hgetall(SessionKeys(session_id).state)).items()}
        if "state" not in fields:
            return None
        replay, floor, last = await self.journal_of(session_id).read(0)
        response = json.loads(fields["response"]) if fields.get("response") else None
        state = read_state(fields["state"], response)
        return StoredSession(session_id, state.session, state.conversation, replay.frames, floor, last, response,
                             state.last_client_event_id, state.conversation_id, state.response_items)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
