"""Runs one Realtime session: claim a unit, pump events both ways, release.

A session ends when its client goes, or when the server ends it: the client
was idle too long, it let more output pile up than the output limits allow
(the active response fails first), or the server shuts down. Then the client
gets an ``error`` saying why, what was queued before it, and a close code.
Large client frames are parsed and decoded off the event loop, so one huge
append does not stall every other session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from speech_to_speech import ids
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.pool import PipelinePool
from speech_to_speech.pipeline.unit import PipelineUnit
from speech_to_speech.realtime import errors
from speech_to_speech.realtime.metrics import ServerMetrics
from speech_to_speech.realtime.outbound import OutboundQueue
from speech_to_speech.realtime.send_loop import attach_wakeup, detach_wakeup, send_loop
from speech_to_speech.realtime.service import RealtimeService
from speech_to_speech.realtime.session_guard import Closing, guard
from speech_to_speech.realtime.transport import Transport

log = logging.getLogger(__name__)

# Close code for "try again later" (RFC 6455 1013), used when no unit is free.
TRY_AGAIN_LATER = 1013
POLICY_VIOLATION = 1008
GOING_AWAY = 1001
# Frames larger than this are parsed (and their audio decoded) on a worker thread.
OFF_LOOP_BYTES = 64 * 1024
# How long a request waits for a busy unit to free before it is refused (a reconnect races its old close).
BUSY_GRACE_S = 0.5
# How long the last events may take to reach a client the server is closing.
FLUSH_TIMEOUT_S = 2.0

SHUTDOWN = Closing(GOING_AWAY, "server shutting down", errors.SERVER_SHUTTING_DOWN,
                   "The server is shutting down; reconnect later", "server_error")


class LiveSessions:
    """The sessions an app serves now, so that a shutdown can end each one with an error and a close."""

    def __init__(self) -> None:
        self._closers: set[asyncio.Future[Closing]] = set()

    def __len__(self) -> int:
        return len(self._closers)

    def add(self, closer: asyncio.Future[Closing]) -> None:
        self._closers.add(closer)

    def discard(self, closer: asyncio.Future[Closing]) -> None:
        self._closers.discard(closer)

    async def close_all(self, closing: Closing = SHUTDOWN, timeout: float = 5.0) -> None:
        """End every live session with ``closing``; returns once they are gone (or after ``timeout``)."""
        for closer in list(self._closers):
            if not closer.done():
                closer.set_result(closing)
        deadline = time.monotonic() + timeout
        while self._closers and time.monotonic() < deadline:
            await asyncio.sleep(0.02)  # shutdown only: sessions flushing their last events


async def _write_loop(transport: Transport, outgoing: OutboundQueue, metrics: ServerMetrics | None) -> None:
    while True:
        event = await outgoing.get()
        if metrics is not None:
            metrics.event_sent(event)
        await transport.send_event(event)
        outgoing.task_done()


async def claim_unit(pool: PipelinePool, settings: ServerSettings) -> PipelineUnit | None:
    """A free unit; a client that reconnects at once may wait for its old unit to finish draining.

    Its old session may not even have noticed the close yet (the unit still busy): every
    request waits ``BUSY_GRACE_S`` for a unit before it is refused.
    """
    started = time.monotonic()
    deadline = started + settings.release_timeout_s
    while (unit := pool.claim()) is None:
        now = time.monotonic()
        draining = any(s.state == "draining" for s in pool.status())
        if now > deadline or (not draining and now - started > BUSY_GRACE_S):
            return None
        await asyncio.sleep(0.02)  # not the audio path: a connection waiting for a unit
    return unit


def busy_error(pool: PipelinePool) -> dict[str, object]:
    return errors.error_event(errors.SESSION_LIMIT_REACHED, f"All {pool.size} pipeline(s) are busy; try again later.",
                              type="invalid_request_error")


async def serve_session(
    transport: Transport,
    incoming: AsyncIterator[str | bytes],
    pool: PipelinePool,
    settings: ServerSettings,
    *,
    validate_language: Callable[[str | None, str | None], str | None] | None = None,
    on_service: Callable[[RealtimeService], None] | None = None,
    metrics: ServerMetrics | None = None,
    unit: PipelineUnit | None = None,
    sessions: LiveSessions | None = None,
) -> None:
    """Serve client events from ``incoming`` until it ends, the transport fails or the server ends the session.

    ``unit``: one the caller already claimed (WebRTC claims before it answers the
    offer); released here at the end like a unit claimed here.
    """
    if unit is None:
        unit = await claim_unit(pool, settings)
    if unit is None:
        rejection = {"event_id": ids.event_id(), **busy_error(pool)}
        if metrics is not None:
            metrics.event_sent(rejection)
        await transport.send_event(rejection)
        await transport.close(TRY_AGAIN_LATER, "session limit reached")
        return
    loop = asyncio.get_running_loop()
    closer: asyncio.Future[Closing] = loop.create_future()
    def overflowed() -> None:
        # At once (inside the emit that overflowed): a response.done the same drain would queue must be failed.
        closing = _output_overflow(settings)
        service.fail_active(closing.error_code, closing.message)
        if not closer.done():
            closer.set_result(closing)

    outgoing = OutboundQueue(settings.max_pending_output_bytes_per_session,
                             settings.max_pending_output_events_per_session, overflowed)
    service = RealtimeService(unit, settings, outgoing.put, media=transport.media,
                              validate_language=validate_language)
    if metrics is not None:
        service.on_response_finished = metrics.response_finished
        service.on_turn_decision = metrics.turn_decided
    if on_service is not None:
        on_service(service)
    if sessions is not None:
        sessions.add(closer)
    wake = attach_wakeup(unit, loop)
    service.start()
    writer = asyncio.create_task(_write_loop(transport, outgoing, metrics), name=f"unit{unit.index}-writer")
    helpers = [
        asyncio.create_task(send_loop(unit, service, wake), name=f"unit{unit.index}-send-loop"),
        asyncio.create_task(_receive(incoming, service), name=f"unit{unit.index}-receiver"),
        asyncio.create_task(_guard(service, settings, closer), name=f"unit{unit.index}-guard"),
    ]
    try:
        waiters: list[asyncio.Future[Any]] = [closer, writer, *helpers]
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if isinstance(task, asyncio.Task) and not task.cancelled() and task.exception() is not None:
                log.info("session on unit %d ended: %r", unit.index, task.exception())
        if closer.done() and not writer.done():
            await _close(service, transport, outgoing, closer.result())
    finally:
        if sessions is not None:
            sessions.discard(closer)
        for task in (*helpers, writer):
            task.cancel()
        for task in (*helpers, writer):
            with contextlib.suppress(BaseException):
                await task
        detach_wakeup(unit)
        pool.release(unit)
        log.info("session on unit %d closed", unit.index)


def _output_overflow(settings: ServerSettings) -> Closing:
    message = (f"More than {settings.max_pending_output_bytes_per_session} bytes or "
               f"{settings.max_pending_output_events_per_session} events waited for this client; "
               "the session is closed")
    return Closing(POLICY_VIOLATION, "output limit exceeded", errors.OUTPUT_LIMIT_EXCEEDED, message, reported=True)


async def _close(service: RealtimeService, transport: Transport, outgoing: OutboundQueue, closing: Closing) -> None:
    """Tell the client why, let what is queued reach it (briefly), then close with the code."""
    log.info("closing a session: %s", closing.reason)
    if not closing.reported and service.response is not None:
        service.fail_active(closing.error_code, closing.message)  # the error, and the response failed
    elif not closing.reported:
        service.emit(errors.error_event(closing.error_code, closing.message, type=closing.error_type))
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(outgoing.join(), FLUSH_TIMEOUT_S)
    with contextlib.suppress(Exception):
        await transport.close(closing.code, closing.reason)


async def _guard(service: RealtimeService, settings: ServerSettings, closer: asyncio.Future[Closing]) -> None:
    closing = await guard(service, settings)
    if not closer.done():
        closer.set_result(closing)


async def _receive(incoming: AsyncIterator[str | bytes], service: RealtimeService) -> None:
    async for message in incoming:
        if len(message) > OFF_LOOP_BYTES:
            service.last_activity = time.monotonic()
            service.handle_client_event(await asyncio.to_thread(service.prepare_client_event, message))
        else:
            service.handle_client_event(message)
