"""A live session's journal in memory, mirrored to Redis behind it, and the link that says when it ends."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from speech_to_speech.realtime.connection.frames import Frame
from speech_to_speech.realtime.sessions.journal import MemoryJournal, Replay
from speech_to_speech.realtime.sessions.registry import digest
from speech_to_speech.realtime.sessions.store.writer import Ack, Append, StoreWriter

# How long a session ending here waits for its last writes to reach Redis.
FLUSH_S = 1.0


class MirroredJournal:
    """A :class:`ReplayJournal` whose answers are the memory journal's; every change is also queued for Redis."""

    def __init__(self, local: MemoryJournal, writer: StoreWriter, session_id: str) -> None:
        self.local = local
        self._writer = writer
        self._session_id = session_id

    @property
    def held_bytes(self) -> int:
        return self.local.held_bytes

    def append(self, seq: int, frame: Frame) -> None:
        self.local.append(seq, frame)
        self._writer.put(Append(self._session_id, seq, frame))

    def after(self, seq: int) -> Replay:
        return self.local.after(seq)

    def ack(self, seq: int) -> None:
        self.local.ack(seq)
        self._writer.put(Ack(self._session_id, seq))

    def close(self) -> None:
        self.local.close()  # the store's copy is the link's to keep or drop


class RedisLink:
    """One session's tie to the Redis store (see base.SessionLink)."""

    def __init__(self, session_id: str, journal: MirroredJournal, writer: StoreWriter,
                 end: Callable[[str, bool], Awaitable[None]]) -> None:
        self.session_id = session_id
        self._journal = journal
        self._writer = writer
        self._end = end

    @property
    def journal(self) -> MirroredJournal:
        return self._journal

    def token(self, token: str) -> None:
        self._writer.token(self.session_id, digest(token))

    def changed(self) -> None:
        self._writer.mark(self.session_id)

    async def finish(self, keep: bool) -> None:
        self._writer.mark(self.session_id)  # the last state, with the last events
        with contextlib.suppress(Exception):
            await self._writer.flush(FLUSH_S)
        await self._end(self.session_id, keep)
