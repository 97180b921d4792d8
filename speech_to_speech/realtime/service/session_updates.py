"""Applying a session patch: a ``session.update``, or the session a WebRTC call opens with.

:class:`SessionUpdates` checks the patch against the session object
(wire/session.py), lets the server check its language there (the session state
tells the pipeline unit the runtime config it derives), and stops a speculation
that no automatic response will take over any more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from speech_to_speech.protocol.error_codes import INVALID_REQUEST
from speech_to_speech.realtime.conversation import noise
from speech_to_speech.realtime.conversation.responses import Responses
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.session import SessionState


class SessionUpdates:
    """How one session's configuration changes (runs on the event loop)."""

    def __init__(self, state: SessionState, *, responses: Responses,
                 validate_language: Callable[[str | None, str | None], str | None] | None = None) -> None:
        self._state = state
        self._responses = responses
        self._validate_language = validate_language

    def configure(self, session: Any, event_id: str | None = None) -> dict[str, Any]:
        """Apply a session patch; raises RealtimeError. The session object as it now is (``session.updated``)."""
        self._check_noise_reduction(session, event_id)
        self._state.apply_update(session, event_id, check_language=self._validate_language)
        self._responses.reconfigured()  # a speculation no automatic response will take over stops
        return self._state.session

    @staticmethod
    def _check_noise_reduction(session: Any, event_id: str | None) -> None:
        """Noise reduction asked of a server without its model's weights is refused, saying what to install."""
        audio = session.get("audio") if isinstance(session, dict) else None
        audio_in = audio.get("input") if isinstance(audio, dict) else None
        asked = audio_in.get("noise_reduction") if isinstance(audio_in, dict) else None
        if not isinstance(asked, dict) or asked.get("type") not in ("near_field", "far_field"):
            return  # off, or malformed (refused by the session's own validation)
        reason = noise.unavailable()
        if reason is not None:
            raise RealtimeError(INVALID_REQUEST, reason, param="session.audio.input.noise_reduction",
                                event_id=event_id)
