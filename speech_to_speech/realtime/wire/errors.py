"""Protocol errors: what a rejected client event turns into on the wire.

The codes themselves are part of the wire contract, in
:mod:`speech_to_speech.protocol.error_codes`; this module is where the server
raises and builds them.
"""

from __future__ import annotations

import time

# The codes' old home: importing them from here keeps working for one release.
from speech_to_speech.protocol import error_types
from speech_to_speech.protocol.error_codes import *  # noqa: F403
from speech_to_speech.protocol.server_events.session import ErrorEvent, error_event


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
        type: str = error_types.INVALID_REQUEST_ERROR,
        param: str | None = None,
        event_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.type = type
        self.param = param
        self.event_id = event_id

    def to_event(self) -> ErrorEvent:
        return error_event(self.code, self.message, type=self.type, param=self.param, event_id=self.event_id)


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
