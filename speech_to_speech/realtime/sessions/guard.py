"""Watches one session for the ends that no event announces.

A client that sends nothing for ``idle_timeout_s`` (no event, no media
audio, and no response of its own under way) gives its unit back. A response
whose pipeline produces nothing for ``response_stall_timeout_s`` (a stage
hung) fails with an error; the session goes on, and its unit is drained,
quarantined and rebuilt when the session ends. A session whose socket
dropped is not idle: the disconnect grace decides when it ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import NORMAL_CLOSURE, POLICY_VIOLATION, error_codes, error_types
from speech_to_speech.realtime.service.realtime_service import RealtimeService

# Never look less often than this (the timeouts may be long): a watchdog, not the audio path.
MAX_NAP_S = 1.0


@dataclass(frozen=True)
class Closing:
    """Why the server ends a session: an error for the client, and the close code after it."""

    code: int
    reason: str
    error_code: str
    message: str
    error_type: str = error_types.SERVER_ERROR
    reported: bool = False  # the client was told already (with the failed response)


async def guard(service: RealtimeService, settings: ServerSettings,
                detached: Callable[[], bool] = lambda: False) -> Closing:
    """Return when the session is idle past its timeout (stalled responses are failed on the way)."""
    idle, stall = settings.limits.idle_timeout_s, settings.limits.response_stall_timeout_s
    while True:
        now = time.monotonic()
        if detached():
            service.last_activity = now  # its grace period, not the idle timeout, ends a detached session
        response = service.response
        if response is not None:
            service.last_activity = now  # a response under way is not idleness
            waited = now - max(service.last_output, response.marks.get("created", now))
            if stall and waited > stall:  # a hung LLM/TTS, or an STT that never transcribes the turn
                service.fail_active(error_codes.RESPONSE_STALLED, f"The pipeline produced nothing for {stall:g} s")
        elif idle and now - service.last_activity > idle:
            message = f"The session sent nothing for {idle:g} s and is closed"
            return Closing(NORMAL_CLOSURE, "idle timeout", error_codes.SESSION_IDLE_TIMEOUT, message,
                           error_types.INVALID_REQUEST_ERROR)
        waits = [MAX_NAP_S]
        if idle:
            waits.append(service.last_activity + idle - now)
        await asyncio.sleep(max(0.01, min(waits)))


def output_overflow(settings: ServerSettings) -> Closing:
    """A client that let more output pile up than the output limits allow: its session is closed."""
    message = (f"More than {settings.limits.max_pending_output_bytes_per_session} bytes or "
               f"{settings.limits.max_pending_output_events_per_session} events waited for this client; "
               "the session is closed")
    return Closing(POLICY_VIOLATION, "output limit exceeded", error_codes.OUTPUT_LIMIT_EXCEEDED, message, reported=True)
