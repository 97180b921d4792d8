"""Which voice names a session or a response may ask for.

Two kinds of name are accepted: the voices the loaded TTS has, and OpenAI's
names, which stock clients send without asking (a backend without a voice
of that name speaks them with its default voice). Anything else is refused
with ``invalid_value`` and the list of names that would work, rather than
being spoken silently with the default voice. A backend that cannot list its
voices (a remote OpenAI-compatible TTS, Kokoro from the hub) accepts any
well-formed name, as it always did.

GA clients put the voice in ``audio.output.voice``; beta clients in a
top-level ``voice``, which is read as the GA field when that one is absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from speech_to_speech.protocol.error_codes import INVALID_REQUEST, INVALID_VALUE
from speech_to_speech.realtime.wire.content_limits import VOICE_MAX_CHARS, VOICE_PATTERN
from speech_to_speech.realtime.wire.errors import RealtimeError

# OpenAI's documented voice names: the Realtime API's built-in voices and those of its speech endpoint.
OPENAI_VOICES = ("alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx", "sage",
                 "shimmer", "verse")


@dataclass(frozen=True)
class VoiceRequest:
    """A voice a client event asks for, and the ``param`` that names where it was written."""

    value: Any
    param: str
    legacy: bool  # written as the beta top-level ``voice``


def requested_voice(request: dict[str, Any], prefix: str) -> VoiceRequest | None:
    """The voice in a ``session`` or ``response`` object, if it sets one (the GA field wins over ``voice``)."""
    audio = request.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    if isinstance(output, dict) and "voice" in output:
        return VoiceRequest(output["voice"], f"{prefix}.audio.output.voice", legacy=False)
    if "voice" in request:
        return VoiceRequest(request["voice"], f"{prefix}.voice", legacy=True)
    return None


@dataclass(frozen=True)
class VoiceCatalog:
    """The voices of the loaded TTS (``installed``; None when the backend cannot list them)."""

    installed: tuple[str, ...] | None = None

    def accepts(self, voice: str) -> bool:
        return self.installed is None or voice in self.installed or voice in OPENAI_VOICES

    def check(self, request: VoiceRequest, event_id: str | None) -> None:
        """Raise RealtimeError for a voice that is not a name, or a name no voice here answers to.

        ``None`` (back to the server's default voice) is always accepted.
        """
        voice = request.value
        if voice is None:
            return
        if not isinstance(voice, str) or len(voice) > VOICE_MAX_CHARS or not re.match(VOICE_PATTERN, voice):
            raise RealtimeError(INVALID_REQUEST, f"'{request.param}' must be a voice name (at most "
                                f"{VOICE_MAX_CHARS} of A-Za-z0-9_.:-)", param=request.param, event_id=event_id)
        if not self.accepts(voice):
            raise RealtimeError(INVALID_VALUE, f"Voice {voice!r} does not exist on this server. {self.describe()}",
                                param=request.param, event_id=event_id)

    def describe(self) -> str:
        """The names that work, for a refusal's message."""
        installed = ", ".join(self.installed or ()) or "none"
        return (f"Voices of this TTS: {installed}. OpenAI's voice names are accepted too "
                f"({', '.join(OPENAI_VOICES)}); those the TTS lacks speak with its default voice.")
