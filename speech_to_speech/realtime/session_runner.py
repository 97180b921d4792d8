"""Runs one Realtime session: claim a unit, pump events both ways, release."""

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
from speech_to_speech.realtime.send_loop import attach_wakeup, detach_wakeup, send_loop
from speech_to_speech.realtime.service import RealtimeService
from speech_to_speech.realtime.transport import Transport

log = logging.getLogger(__name__)

# Close code for "try again later" (RFC 6455 1013), used when no unit is free.
TRY_AGAIN_LATER = 1013


async def _write_loop(transport: Transport, outgoing: asyncio.Queue[dict[str, Any]],
                      metrics: ServerMetrics | None) -> None:
    while True:
        event = await outgoing.get()
        if metrics is not None:
            metrics.event_sent(event)
        await transport.send_event(event)


async def claim_unit(pool: PipelinePool, settings: ServerSettings) -> PipelineUnit | None:
    """A free unit; a client that reconnects at once may wait for its old unit to finish draining."""
    deadline = time.monotonic() + settings.release_timeout_s
    while (unit := pool.claim()) is None:
        if time.monotonic() > deadline or not any(s.state == "draining" for s in pool.status()):
            return None
        await asyncio.sleep(0.02)  # not the audio path: a connection waiting for a unit
    return unit


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
) -> None:
    """Serve client events from ``incoming`` until it ends or the transport fails.

    ``unit``: one the caller already claimed (WebRTC claims before it answers the
    offer); released here at the end like a unit claimed here.
    """
    if unit is None:
        unit = await claim_unit(pool, settings)
    if unit is None:
        rejection = {
            "event_id": ids.event_id(),
            **errors.error_event(errors.SESSION_LIMIT_REACHED,
                                 f"All {pool.size} pipeline(s) are busy; try again later.",
                                 type="invalid_request_error"),
        }
        if metrics is not None:
            metrics.event_sent(rejection)
        await transport.send_event(rejection)
        await transport.close(TRY_AGAIN_LATER, "session limit reached")
        return
    loop = asyncio.get_running_loop()
    outgoing: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    service = RealtimeService(unit, settings, outgoing.put_nowait,
                              media=transport.media,
                              validate_language=validate_language)
    if metrics is not None:
        service.on_response_finished = metrics.response_finished
    if on_service is not None:
        on_service(service)
    wake = attach_wakeup(unit, loop)
    service.start()
    tasks = [
        asyncio.create_task(_write_loop(transport, outgoing, metrics), name=f"unit{unit.index}-writer"),
        asyncio.create_task(send_loop(unit, service, wake), name=f"unit{unit.index}-send-loop"),
    ]
    receiver = asyncio.create_task(_receive(incoming, service), name=f"unit{unit.index}-receiver")
    try:
        done, _ = await asyncio.wait([receiver, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not receiver and not task.cancelled() and task.exception() is not None:
                log.info("session on unit %d ended: %r", unit.index, task.exception())
    finally:
        for task in (receiver, *tasks):
            task.cancel()
        for task in (receiver, *tasks):
            with contextlib.suppress(BaseException):
                await task
        detach_wakeup(unit)
        pool.release(unit)
        log.info("session on unit %d closed", unit.index)


async def _receive(incoming: AsyncIterator[str | bytes], service: RealtimeService) -> None:
    async for message in incoming:
        service.handle_client_event(message)
