"""Protocol errors: what a rejected client event turns into on the wire."""

from __future__ import annotations

import time
from typing import Any


class RealtimeError(Exception):
    """A client event was rejected; becomes an ``error`` server event.

    ``type`` follows the OpenAI error types (``invalid_request_error`` for
    bad client input, ``server_error`` for our failures).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        event_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.type = type
        self.param = param
        self.event_id = event_id

    def to_event(self) -> dict[str, Any]:
        return error_event(self.code, self.message, type=self.type, param=self.param, event_id=self.event_id)


def error_event(
    code: str,
    message: str,
    *,
    type: str = "invalid_request_error",
    param: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {
            "type": type,
            "code": code,
            "message": message,
            "param": param,
            "event_id": event_id,
        },
    }


# Codes used across the protocol layer, named once.
SESSION_LIMIT_REACHED = "session_limit_reached"
UNKNOWN_OR_INVALID_EVENT = "unknown_or_invalid_event"
# Limits of one session (docs/security.md).
EVENT_TOO_LARGE = "event_too_large"
INPUT_AUDIO_BUFFER_FULL = "input_audio_buffer_full"
INPUT_QUEUE_FULL = "input_audio_queue_full"
OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
SESSION_IDLE_TIMEOUT = "session_idle_timeout"
SERVER_SHUTTING_DOWN = "server_shutting_down"
TOO_MANY_SESSIONS = "too_many_sessions"
INVALID_SESSION_TYPE = "invalid_session_type"
ACTIVE_RESPONSE = "conversation_already_has_active_response"
ITEM_NOT_FOUND = "conversation_item_not_found"
RESPONSE_NOT_FOUND = "response_not_found"  # a playback.ack of a response this session does not know
INVALID_REQUEST = "invalid_request_error"
INVALID_VALUE = "invalid_value"
COMMIT_EMPTY = "input_audio_buffer_commit_empty"
INVALID_EVENT_FOR_TRANSPORT = "invalid_event_for_transport"
TOOL_FOLLOWUP_ALREADY_ANSWERED = "tool_followup_already_answered"
TOOL_FOLLOWUP_USER_INPUT_PENDING = "tool_followup_user_input_pending"
SERVER_ERROR = "server_error"
# POST /v1/realtime/calls (WebRTC), answered over HTTP.
INVALID_SDP = "invalid_sdp"
WEBRTC_UNAVAILABLE = "webrtc_unavailable"
CALL_NOT_FOUND = "call_not_found"
# Resuming a session over a new socket (docs/sessions.md, "Resume and replay").
SESSION_RESUME_EXPIRED = "session_resume_expired"
SESSION_RESUME_INVALID_TOKEN = "session_resume_invalid_token"
SESSION_RESUME_REQUIRED = "session_resume_required"


def stage_failed(stage: str) -> str:
    """The code of a pipeline stage's failure: ``stt_failed``, ``tts_failed``, ``vad_failed``, …"""
    return f"{stage}_failed"


# A stage's failures that concern no response or turn reach the client at most this often.
STAGE_ERROR_INTERVAL_S = 5.0


class Throttle:
    """Says, per key, whether an event is due: the first one, then one per ``interval_s``."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._last: dict[str, float] = {}

    def due(self, key: str) -> bool:
        now = time.monotonic()
        if now - self._last.get(key, -self.interval_s) < self.interval_s:
            return False
        self._last[key] = now
        return True
