"""``--session_store memory``: everything stays in this process, as before there was a store.

The session's own :class:`MemoryJournal` and the app's ``SessionRegistry``
are the whole truth; a resume that lands on another server finds nothing.
"""

from __future__ import annotations

from speech_to_speech.realtime.sessions.journal import MemoryJournal, ReplayJournal
from speech_to_speech.realtime.sessions.store.base import SnapshotSource, StoredSession, Takeover


class MemoryLink:
    def __init__(self, journal: MemoryJournal) -> None:
        self._journal = journal

    @property
    def journal(self) -> ReplayJournal:
        return self._journal

    def token(self, token: str) -> None:
        pass

    def changed(self) -> None:
        pass

    async def finish(self, keep: bool) -> None:
        pass


class MemoryStore:
    shared = False

    def link(self, session_id: str, journal: MemoryJournal, snapshot: SnapshotSource) -> MemoryLink:
        return MemoryLink(journal)

    async def start(self, on_takeover: Takeover) -> None:
        pass

    async def close(self) -> None:
        pass

    async def reachable(self) -> bool:
        return True

    async def token_digest(self, session_id: str) -> bytes | None:
        return None

    async def claim(self, session_id: str) -> bool:
        return False

    async def rotate(self, session_id: str, old: bytes, new: bytes) -> bool:
        return False

    async def load(self, session_id: str) -> StoredSession | None:
        return None

    async def release(self, session_id: str) -> None:
        pass
