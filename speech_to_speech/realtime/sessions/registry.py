"""The app's live, resumable sessions by id, and the tokens that let a new socket take one over.

A resume token is a bearer secret: only its SHA-256 digest is kept, a
presented token is compared with :func:`hmac.compare_digest`, and every
successful resume rotates it (the old one stops working at once). Session
ids are random and never reused; an ended session is removed, so resuming
it is the same as resuming one that never existed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Generic, Protocol, TypeVar

from speech_to_speech.protocol import error_codes
from speech_to_speech.realtime.wire.errors import RealtimeError

TOKEN_PREFIX = "rt_"


class Detachable(Protocol):
    @property
    def detached_at(self) -> float | None:
        """Monotonic time its socket went away; None while one is attached."""

    def expire(self, reason: str) -> None:
        """End the session, detached or not, saying ``reason``."""


S = TypeVar("S", bound=Detachable)


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(24)


def digest(token: str) -> bytes:
    """What is kept of a resume token: its SHA-256 (a store shared by replicas keeps the same)."""
    return hashlib.sha256(token.encode()).digest()


class SessionRegistry(Generic[S]):
    def __init__(self) -> None:
        self._sessions: dict[str, S] = {}
        self._digests: dict[str, bytes] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def add(self, session_id: str, session: S) -> str:
        """Register ``session``; returns its first resume token (the only copy: it is not stored)."""
        if session_id in self._sessions:
            raise ValueError(f"session {session_id} is registered already")
        self._sessions[session_id] = session
        token = new_token()
        self._digests[session_id] = digest(token)
        return token

    def get(self, session_id: str) -> S | None:
        return self._sessions.get(session_id)

    def adopt(self, session_id: str, session: S, token: str) -> None:
        """Register a session taken over from another replica, with the token it was resumed to."""
        self._sessions[session_id] = session
        self._digests[session_id] = digest(token)

    def remove(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._digests.pop(session_id, None)

    def resume(self, session_id: object, token: object, event_id: str | None = None) -> tuple[S, str]:
        """The session ``token`` opens, and its new token; raises the protocol error a client gets."""
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None or not isinstance(session_id, str):
            raise RealtimeError(error_codes.SESSION_RESUME_EXPIRED,
                                f"Unknown, expired or ended session: {session_id!r}",
                                param="session_id", event_id=event_id)
        presented = digest(token) if isinstance(token, str) else b""
        if not hmac.compare_digest(presented, self._digests[session_id]):
            raise RealtimeError(error_codes.SESSION_RESUME_INVALID_TOKEN,
                                "The resume token does not open this session",
                                param="resume_token", event_id=event_id)
        rotated = new_token()
        self._digests[session_id] = digest(rotated)
        return session, rotated

    def oldest_detached(self) -> S | None:
        """The session whose socket went away longest ago, if any is detached."""
        detached = [s for s in self._sessions.values() if s.detached_at is not None]
        return min(detached, key=lambda s: s.detached_at or 0.0, default=None)

    def evict_oldest(self) -> bool:
        """Expire the session detached longest ago, to free its unit; False if no session is detached."""
        session = self.oldest_detached()
        if session is None:
            return False
        session.expire("evicted")
        return True
