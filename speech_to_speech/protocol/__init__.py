"""The wire contract between the server and its clients, in one place: both import it, neither owns it.

What the OpenAI Realtime protocol leaves to us, or we add to it, named once:

- ``event``: the type of one event as it travels (its JSON object);
- ``extensions``: the names a client opts into with ``session.extensions``;
- ``metadata``: the keys our extensions and the tool follow-up write in
  ``metadata``, and the encoding of call ids there;
- ``error_codes``: the ``code`` of every ``error`` event the server sends;
- ``error_types``: the ``type`` of an error, OpenAI's class of it;
- ``close_codes``: the WebSocket close codes the server sends and the client reads;
- ``policies``: the values of the session's overlap and playback-commit policies;
- ``server_events``: every event the server sends, each a ``TypedDict`` with the
  one constructor the server builds it with.

It is a foundation: it imports nothing else of ours, so the client can speak
the protocol without importing the server. The names below are the ones this
package has always exported; the rest are imported from their module.
"""

from __future__ import annotations

from speech_to_speech.protocol.close_codes import (
    ABNORMAL_CLOSURE,
    GOING_AWAY,
    INTERNAL_ERROR,
    NO_STATUS_RECEIVED,
    NORMAL_CLOSURE,
    POLICY_VIOLATION,
    SERVICE_RESTART,
    TRY_AGAIN_LATER,
)
from speech_to_speech.protocol.event import Event
from speech_to_speech.protocol.extensions import (
    ECHO_CANCELLATION_EXTENSION,
    SNAPSHOT_EXTENSION,
    TIMINGS_EXTENSION,
    VISEMES_EXTENSION,
)
from speech_to_speech.protocol.metadata import TIMINGS_KEY, TURN_DETECTION_KEY

__all__ = [
    "ABNORMAL_CLOSURE",
    "ECHO_CANCELLATION_EXTENSION",
    "GOING_AWAY",
    "INTERNAL_ERROR",
    "NORMAL_CLOSURE",
    "NO_STATUS_RECEIVED",
    "POLICY_VIOLATION",
    "SERVICE_RESTART",
    "SNAPSHOT_EXTENSION",
    "TIMINGS_EXTENSION",
    "TIMINGS_KEY",
    "TRY_AGAIN_LATER",
    "TURN_DETECTION_KEY",
    "VISEMES_EXTENSION",
    "Event",
]
