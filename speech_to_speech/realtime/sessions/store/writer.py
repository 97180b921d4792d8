"""Write-behind to Redis: the sessions' journal writes queued, batched, and never waited for.

A session's ``emit`` only puts an operation on a bounded queue; one task
per replica drains it into one pipelined round trip per batch. When Redis
is slow or down the queue fills and new operations are dropped (counted
``dropped``); a batch Redis does not take is counted ``failed``. Either way
the session goes on from memory: what is lost is the store's copy, so a
resume on another replica may have to resync. A lost append is never
skipped silently: the next append raises the stored journal's floor past
it (``gap``), so a replay from before it reports the gap.

Token digests and the session state are not queued: the latest of each is
kept per session and written with the next batch, so they cannot be
dropped, only late.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import RedisError

from speech_to_speech.realtime.connection.frames import Frame
from speech_to_speech.realtime.sessions.store.base import SnapshotSource
from speech_to_speech.realtime.sessions.store.redis_journal import RedisJournal
from speech_to_speech.realtime.sessions.store.state import state_json

log = logging.getLogger(__name__)

# After a batch failed, wait this long before the next (Redis down: do not spin).
RETRY_S = 0.5
# Operations in one pipelined round trip: small enough to be written well within the timeout.
MAX_BATCH = 256
# What a store that is down or slow raises.
STORE_ERRORS = (RedisError, OSError, TimeoutError)


@dataclass(frozen=True)
class Append:
    session_id: str
    seq: int
    frame: Frame


@dataclass(frozen=True)
class Ack:
    session_id: str
    seq: int


Op = Append | Ack


@dataclass
class _Session:
    journal: RedisJournal
    snapshot: SnapshotSource
    keep_ms: int
    token: bytes | None = None  # a token digest to write with the next batch
    digest: bytes | None = None  # the latest digest, to write again should the store lose it
    dirty: bool = True
    written: str = ""  # the state last written, to skip rewriting an unchanged one


class StoreWriter:
    def __init__(self, redis: Redis, *, max_ops: int, timeout_s: float,
                 on_write: Callable[[str, int], None]) -> None:
        self.redis = redis
        self.max_ops = max_ops
        self.timeout_s = timeout_s
        self.on_write = on_write  # (outcome, count)
        self._ops: deque[Op] = deque()
        self._sessions: dict[str, _Session] = {}
        self._gaps: dict[str, int] = {}  # session: every seq up to this one is lost to the store
        self._wake = asyncio.Event()
        self._flushes: list[asyncio.Future[None]] = []

    def add(self, session_id: str, journal: RedisJournal, snapshot: SnapshotSource, keep_ms: int) -> None:
        self._sessions[session_id] = _Session(journal, snapshot, keep_ms)
        self._wake.set()

    def remove(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._gaps.pop(session_id, None)

    def put(self, op: Op) -> None:
        if op.session_id not in self._sessions:
            return
        if len(self._ops) >= self.max_ops:
            self.on_write("dropped", 1)
            if isinstance(op, Append):
                self._gaps[op.session_id] = max(self._gaps.get(op.session_id, 0), op.seq)
            return
        self._ops.append(op)
        self._wake.set()

    def token(self, session_id: str, digest: bytes) -> None:
        if (session := self._sessions.get(session_id)) is not None:
            session.token = session.digest = digest
            self._wake.set()

    def lost(self, session_id: str) -> None:
        """The store may have lost what it held of the session (Redis restarted, or its keys expired):
        write its token and state again (the journal says its own gap: redis_journal.py)."""
        if (session := self._sessions.get(session_id)) is None:
            return
        session.token = session.digest
        session.dirty, session.written = True, ""
        self._wake.set()

    def mark(self, session_id: str) -> None:
        if (session := self._sessions.get(session_id)) is not None:
            session.dirty = True
            self._wake.set()

    async def flush(self, timeout: float) -> bool:
        """Wait (at most ``timeout``) until what is queued now has been written or given up."""
        future = asyncio.get_running_loop().create_future()
        self._flushes.append(future)
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except TimeoutError:
            return False

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch = [self._ops.popleft() for _ in range(min(len(self._ops), MAX_BATCH))]
            flushes: list[asyncio.Future[None]] = []
            if not self._ops:  # a flush is done once everything queued before it is written
                flushes, self._flushes = self._flushes, []
            else:
                self._wake.set()
            try:
                await self._write(batch)
            finally:
                for future in flushes:
                    if not future.done():
                        future.set_result(None)

    async def _write(self, batch: list[Op]) -> None:
        applied: dict[str, int] = {}  # the gaps this batch says: cleared once it is written
        async with self.redis.pipeline(transaction=False) as pipe:
            count = await self._queue_ops(pipe, batch, applied) + self._queue_state(pipe)
            if not count:
                return
            try:
                await asyncio.wait_for(pipe.execute(raise_on_error=False), self.timeout_s)
            except STORE_ERRORS as error:  # Redis down or slow: the sessions go on, the store's copy has a gap
                self._failed(batch, count, error)
                await asyncio.sleep(RETRY_S)
                return
        for session_id, gap in applied.items():
            if self._gaps.get(session_id) == gap:
                del self._gaps[session_id]
        self.on_write("ok", count)

    def _failed(self, batch: list[Op], count: int, error: BaseException) -> None:
        self.on_write("failed", count)
        for op in batch:
            if isinstance(op, Append):
                self._gaps[op.session_id] = max(self._gaps.get(op.session_id, 0), op.seq)
        for session in self._sessions.values():
            session.dirty, session.written = True, ""
            session.token = session.digest  # it may have been in this batch
        log.warning("session store: %d write(s) failed: %r", count, error)

    async def _queue_ops(self, pipe: Pipeline, batch: list[Op], applied: dict[str, int]) -> int:
        count = 0
        for op in batch:
            session = self._sessions.get(op.session_id)
            if session is None:
                continue
            count += 1
            if isinstance(op, Ack):
                await session.journal.ack_to(pipe, op.seq)
                continue
            gap = self._gaps.get(op.session_id, 0)
            gap = gap if gap < op.seq else 0  # a gap after this event is said by a later one
            if gap:
                applied[op.session_id] = gap
            await session.journal.append_to(pipe, op.seq, op.frame, gap)
            if op.frame.type == "response.created":  # the response in the making, should this server be lost
                body = json.loads(op.frame.text).get("response") or {}
                pipe.hset(session.journal.keys.state, "response", json.dumps(body))
            elif op.frame.type == "response.done":
                pipe.hdel(session.journal.keys.state, "response")
        return count

    def _queue_state(self, pipe: Pipeline) -> int:
        count = 0
        for session in self._sessions.values():
            key = session.journal.keys.state
            if session.token is not None:
                pipe.hset(key, "token", session.token.hex())
                session.token = None
                count += 1
            if not session.dirty:
                continue
            with contextlib.suppress(Exception):  # a snapshot that fails is retried at the next mark
                state = state_json(session.snapshot())
                session.dirty = False
                if state != session.written:
                    session.written = state
                    pipe.hset(key, "state", state)
                    pipe.pexpire(key, session.keep_ms)
                    count += 1
        return count
