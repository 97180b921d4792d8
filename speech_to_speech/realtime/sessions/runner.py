"""Starts Realtime sessions and serves sockets to them: on a claimed unit, or by resuming a live session.

A session (sessions/live.py) ends when its client says goodbye, or when the
server ends it: the client was idle too long, it let more output pile up
than the output limits allow (the active response fails first), its socket
dropped and no new one resumed it within ``disconnect_grace_s``, or the
server shuts down. A client that is still there gets an ``error`` saying
why, what was queued before it, and a close code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import GOING_AWAY, POLICY_VIOLATION, SERVICE_RESTART, error_codes, error_types
from speech_to_speech.protocol.server_events.session import ErrorEvent, error_event
from speech_to_speech.realtime.connection.frames import to_frame
from speech_to_speech.realtime.connection.transport import Transport
from speech_to_speech.realtime.metrics import ServerMetrics
from speech_to_speech.realtime.service.client_events import CLIENT_EVENTS
from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.realtime.service.session_events import RESUME, ResumeRequest, resume_request
from speech_to_speech.realtime.sessions.attachment import Attachment
from speech_to_speech.realtime.sessions.claim import UnitLease
from speech_to_speech.realtime.sessions.guard import Closing
from speech_to_speech.realtime.sessions.live import LiveSession
from speech_to_speech.realtime.sessions.registry import SessionRegistry
from speech_to_speech.realtime.sessions.store import SessionStore
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.events import EventLimits, parse_client_event

log = logging.getLogger(__name__)

# How long a socket opened with ?autostart=0 may take to send its session.resume.
RESUME_HANDSHAKE_TIMEOUT_S = 10.0

# Builds, from the shared store, a session this replica does not hold, attached to the socket.
TakeOver = Callable[[Transport, ResumeRequest], Awaitable[tuple[LiveSession, Attachment]]]

SHUTDOWN = Closing(GOING_AWAY, "server shutting down", error_codes.SERVER_SHUTTING_DOWN,
                   "The server is shutting down; reconnect later", error_types.SERVER_ERROR)
# SIGTERM, an orchestrator's restart: the session is not over, only this replica's part in it (docs/deployment.md).
RESTART = Closing(SERVICE_RESTART, "server restarting: reconnect and resume", error_codes.SERVER_SHUTTING_DOWN,
                  "The server is restarting; reconnect (and resume, where replicas share a session store)",
                  error_types.SERVER_ERROR)


class LiveSessions:
    """The sessions an app serves now, so that a shutdown can end each one with an error and a close."""

    def __init__(self) -> None:
        # A session's closer resolves to why it ends (None: its client went); detached sessions are here too.
        self._closers: set[asyncio.Future[Closing | None]] = set()

    def __len__(self) -> int:
        return len(self._closers)

    def add(self, closer: asyncio.Future[Closing | None]) -> None:
        self._closers.add(closer)

    def discard(self, closer: asyncio.Future[Closing | None]) -> None:
        self._closers.discard(closer)

    async def close_all(self, closing: Closing = SHUTDOWN, timeout: float = 5.0) -> None:
        """End every live session with ``closing``; returns once they are gone (or after ``timeout``)."""
        for closer in list(self._closers):
            if not closer.done():
                closer.set_result(closing)
        deadline = time.monotonic() + timeout
        while self._closers and time.monotonic() < deadline:
            await asyncio.sleep(0.02)  # shutdown only: sessions flushing their last events


async def serve_session(
    transport: Transport,
    incoming: AsyncIterator[str | bytes],
    lease: UnitLease,
    settings: ServerSettings,
    *,
    validate_language: Callable[[str | None, str | None], str | None] | None = None,
    on_service: Callable[[RealtimeService], None] | None = None,
    metrics: ServerMetrics | None = None,
    sessions: LiveSessions | None = None,
    registry: SessionRegistry[LiveSession] | None = None,
    store: SessionStore | None = None,
) -> None:
    """Start a session on the unit of ``lease`` and serve it over ``transport`` until the socket goes or the
    session ends.

    ``lease``: claimed by the caller at the session gate (sessions/gate.py), before the
    handshake or the offer is answered; the session keeps it once it starts and
    releases it at its end (before that, the caller's Entry does). ``registry``:
    where a resumable session is found by a later ``session.resume``; without one
    the session ends with its socket (WebRTC). A resumable session whose socket
    dropped goes on after this returns, until it is resumed or its grace ends.
    """
    session = LiveSession(lease, settings, media=transport.media, validate_language=validate_language,
                          metrics=metrics, registry=registry, store=store)
    if on_service is not None:
        on_service(session.service)
    if sessions is not None:
        sessions.add(session.closer)
        session.finished.add_done_callback(lambda _: sessions.discard(session.closer))
    attachment = session.start(transport)
    await session.serve(attachment, incoming)


async def resume_session(
    transport: Transport,
    incoming: AsyncIterator[str | bytes],
    registry: SessionRegistry[LiveSession],
    settings: ServerSettings,
    *,
    metrics: ServerMetrics | None = None,
    take_over: TakeOver | None = None,
) -> None:
    """Serve a socket opened with ``?autostart=0``: its first event must resume a live session.

    ``take_over``: builds a session this replica does not hold from the shared store (sessions/move.py).

    A refused resume (unknown, expired or ended session; a wrong token; anything
    but a valid ``session.resume``) gets an ``error`` naming the client's event_id,
    then the socket closes with 1008; no session is touched.
    """
    messages = aiter(incoming)
    try:
        raw = await asyncio.wait_for(anext(messages), RESUME_HANDSHAKE_TIMEOUT_S)
    except StopAsyncIteration:
        return
    except TimeoutError:
        message = f"No {RESUME} within {RESUME_HANDSHAKE_TIMEOUT_S:g} s of opening the socket"
        await refuse(transport, error_event(error_codes.SESSION_RESUME_REQUIRED, message),
                      POLICY_VIOLATION, "no session.resume", metrics)
        return
    try:
        event = parse_client_event(raw, CLIENT_EVENTS, EventLimits(settings.limits.max_event_bytes,
                                                                   settings.limits.max_event_depth))
        request = resume_request(event)
        if take_over is not None and request.session_id not in registry:
            session, attachment = await take_over(transport, request)
        else:
            session, token = registry.resume(request.session_id, request.resume_token, request.event_id)
            if session.closer.done():  # ending (closed, expired, evicted) but not yet out of the registry
                raise RealtimeError(error_codes.SESSION_RESUME_EXPIRED, f"Session {request.session_id} has ended",
                                    param="session_id", event_id=request.event_id)
            attachment = session.resume(transport, request, token)
    except RealtimeError as error:
        await refuse(transport, error.to_event(), POLICY_VIOLATION, "session not resumed", metrics)
        return
    await session.serve(attachment, messages)


async def refuse(transport: Transport, error: ErrorEvent, code: int, reason: str,
                 metrics: ServerMetrics | None) -> None:
    """A connection-level error (no session, so no seq) through the same serialisation, then the close."""
    if metrics is not None:
        metrics.event_sent(error)
    with contextlib.suppress(Exception):
        await transport.send_text(to_frame(error).text)
    with contextlib.suppress(Exception):
        await transport.close(code, reason)
