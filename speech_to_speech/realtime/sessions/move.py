"""A session moving between replicas (``--session_store redis``): taken over here, or handed over from here.

Taking over, for a ``session.resume`` of a session this replica does not
hold: the token is checked against the store's digest, a unit is claimed
(before anything irreversible), then the session's lease (its live owner is
asked to let go and first writes what it has queued; a dead one's lease is
taken at once), the token is rotated in the store, and the session is
built on the unit from what the store holds and resumed from the client's
cursor. Handing over: the owner is asked for a session and lets it go
(:meth:`LiveSession.move_out`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable

from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import error_codes
from speech_to_speech.realtime.connection.transport import Transport
from speech_to_speech.realtime.metrics import ServerMetrics
from speech_to_speech.realtime.service.session_events import ResumeRequest
from speech_to_speech.realtime.sessions.attachment import Attachment
from speech_to_speech.realtime.sessions.gate import Refusal, SessionGate
from speech_to_speech.realtime.sessions.live import LiveSession
from speech_to_speech.realtime.sessions.registry import SessionRegistry, digest, new_token
from speech_to_speech.realtime.sessions.store import SessionStore
from speech_to_speech.realtime.wire.errors import RealtimeError

log = logging.getLogger(__name__)

def _unavailable(request: ResumeRequest, why: str) -> RealtimeError:
    return RealtimeError(error_codes.SESSION_STORE_UNAVAILABLE, f"The session cannot be resumed now: {why}; "
                         "try again", param="session_id", event_id=request.event_id)


async def take_over(transport: Transport, request: ResumeRequest, *, store: SessionStore,
                    registry: SessionRegistry[LiveSession], gate: SessionGate, settings: ServerSettings,
                    metrics: ServerMetrics | None = None,
                    on_session: Callable[[LiveSession], None] | None = None) -> tuple[LiveSession, Attachment]:
    """Build the session of ``request`` here from the store and attach ``transport``; raises the
    RealtimeError the client is refused with. Returns the session and its attachment."""
    session_id = request.session_id
    try:
        stored_digest = await store.token_digest(session_id)
    except Exception as error:  # noqa: BLE001 - whatever the store raises, the client is told to retry
        raise _unavailable(request, f"the session store did not answer ({type(error).__name__})") from None
    if stored_digest is None:
        raise RealtimeError(error_codes.SESSION_RESUME_EXPIRED, f"Unknown, expired or ended session: {session_id!r}",
                            param="session_id", event_id=request.event_id)
    presented = digest(request.resume_token)
    if not hmac.compare_digest(presented, stored_digest):
        raise RealtimeError(error_codes.SESSION_RESUME_INVALID_TOKEN, "The resume token does not open this session",
                            param="resume_token", event_id=request.event_id)
    async with gate.session(None) as entry:  # a unit only: the resuming socket holds its address's place
        if isinstance(entry, Refusal):
            raise RealtimeError(entry.code, entry.message, event_id=request.event_id)
        claimed = False
        try:
            if not await store.claim(session_id):
                raise _unavailable(request, "its server did not let it go in time")
            claimed = True
            token = new_token()
            if not await store.rotate(session_id, stored_digest, digest(token)):  # resumed elsewhere meanwhile
                raise RealtimeError(error_codes.SESSION_RESUME_INVALID_TOKEN, "The resume token was used already",
                                    param="resume_token", event_id=request.event_id)
            stored = await store.load(session_id)
            if stored is None:
                raise RealtimeError(error_codes.SESSION_RESUME_EXPIRED, f"Session {session_id} has ended",
                                    param="session_id", event_id=request.event_id)
            session = LiveSession(entry.lease, settings, metrics=metrics, registry=registry, store=store,
                                  restored=stored)
        except BaseException as error:
            if claimed:
                await store.release(session_id)
            if isinstance(error, RealtimeError) or not isinstance(error, Exception):
                raise
            raise _unavailable(request, f"the session store failed ({type(error).__name__})") from None
        if on_session is not None:
            on_session(session)
        log.info("session %s taken over from the store: %d event(s) held, last seq %d", session_id,
                 len(stored.frames), stored.last_seq)
        return session, session.adopt(transport, request, token, stored)  # adopt keeps the unit


def hand_over(registry: SessionRegistry[LiveSession], store: SessionStore) -> Callable[[str], Awaitable[None]]:
    """What this replica does when another one asks for one of its sessions."""

    async def handle(session_id: str) -> None:
        session = registry.get(session_id)
        if session is None:  # ended here already, or never ours: let its lease go if we hold it
            await store.release(session_id)
            return
        log.info("session %s: another replica takes it over", session_id)
        session.move_out()

    return handle
