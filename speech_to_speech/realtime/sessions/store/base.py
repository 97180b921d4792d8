"""The store's interface: what a live session hands it, and what a replica taking a session over reads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from speech_to_speech.realtime.connection.frames import Frame
from speech_to_speech.realtime.conversation.history import ConversationState
from speech_to_speech.realtime.sessions.journal import MemoryJournal, ReplayJournal

# Called with a session id when another replica takes that session (or its lease was lost).
Takeover = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class Snapshot:
    """What a session is now, read when the store writes it (it holds live objects: serialise it at once)."""

    session: dict[str, Any]  # the session object
    conversation: ConversationState  # its items, from which the LLM's history is derived
    last_client_event_id: str | None  # the last client event taken (protocol/resume.py)
    conversation_id: str | None = None  # what responses name as their conversation
    # The items of the response in the making: should this server be lost, they leave the history.
    response_items: tuple[str, ...] = ()


# Reads a session's snapshot when the store is about to write it.
SnapshotSource = Callable[[], Snapshot]


@dataclass(frozen=True)
class StoredSession:
    """A session as the store holds it: what a replica needs to serve it from where it was left."""

    session_id: str
    session: dict[str, Any]
    conversation: ConversationState
    frames: tuple[Frame, ...]  # the journal, oldest first
    floor: int  # every seq above it up to last_seq is in frames
    last_seq: int
    # The body of the response.created of a response that had not ended when last written.
    response: dict[str, Any] | None
    last_client_event_id: str | None = None
    conversation_id: str | None = None
    response_items: tuple[str, ...] = ()  # the items of the response in the making when last written


class SessionLink(Protocol):
    """One live session's tie to its store; no method waits on the store (``finish`` aside)."""

    @property
    def journal(self) -> ReplayJournal:
        """The journal the session appends to (memory first; the store's copy is written behind)."""

    def token(self, token: str) -> None:
        """The session's resume token is now ``token`` (the store keeps its digest)."""

    def changed(self) -> None:
        """The session object or the conversation changed: write them (soon, not now)."""

    async def finish(self, keep: bool) -> None:
        """The session ends in this process: its keys go, or (``keep``) stay for another replica."""


class SessionStore(Protocol):
    @property
    def shared(self) -> bool:
        """Whether other replicas see these sessions (a resume of a session unknown here may find it)."""

    def link(self, session_id: str, journal: MemoryJournal, snapshot: SnapshotSource) -> SessionLink:
        """Tie a session this replica now owns to the store (a new one, or one it took over)."""

    async def start(self, on_takeover: Takeover) -> None:
        """Listen for other replicas asking for this one's sessions."""

    async def close(self) -> None:
        """Write what is queued (briefly) and let go; the sessions' keys stay (their leases lapse)."""

    async def reachable(self) -> bool:
        """Whether the store answers now (a readiness check)."""

    async def token_digest(self, session_id: str) -> bytes | None:
        """The digest of the session's resume token; None: the store knows no such session."""

    async def claim(self, session_id: str) -> bool:
        """Take ownership of the session, asking its live owner to let it go; False: not in time."""

    async def rotate(self, session_id: str, old: bytes, new: bytes) -> bool:
        """Replace the token digest ``old`` with ``new``; False if ``old`` is not the stored one."""

    async def load(self, session_id: str) -> StoredSession | None:
        """Everything held for the session (after ``claim``, so its last owner has written it all)."""

    async def release(self, session_id: str) -> None:
        """Give back a session claimed but not served (no unit, a refusal)."""
