"""Typed server events for the RealtimeClient: small frozen views over the wire JSON.

Each event keeps the parsed wire object in ``raw`` (read-only) and names the
fields most code reads (``event_id``, ``server_event_seq``, ``response_id``,
decoded ``audio``, ``text``). A type this module does not know still arrives,
as a plain ``RealtimeEvent``: the server may add events, and the client must
never drop them.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.client.errors import ProtocolError, SessionClosed

log = logging.getLogger(__name__)

# Output audio is PCM16 mono: two bytes per sample.
BYTES_PER_SAMPLE = 2


@dataclass(frozen=True)
class RealtimeEvent:
    """One server event as received (``received_at`` is ``time.monotonic()`` at arrival)."""

    type: str
    event_id: str | None
    server_event_seq: int | None
    raw: Mapping[str, Any] = field(repr=False)
    received_at: float = field(default=0.0, compare=False)

    @property
    def session_id(self) -> str | None:
        value = self.raw.get("session_id")
        if value is None:
            session = self.raw.get("session")
            value = session.get("id") if isinstance(session, Mapping) else None
        return None if value is None else str(value)

    @property
    def response_id(self) -> str | None:
        value = self.raw.get("response_id")
        if value is None:
            response = self.raw.get("response")
            value = response.get("id") if isinstance(response, Mapping) else None
        return None if value is None else str(value)

    @property
    def item_id(self) -> str | None:
        value = self.raw.get("item_id")
        if value is None:
            item = self.raw.get("item")
            value = item.get("id") if isinstance(item, Mapping) else None
        return None if value is None else str(value)

    @property
    def audio(self) -> bytes:
        """Decoded audio this event carries (empty for events without audio)."""
        return b""

    @property
    def text(self) -> str | None:
        """Text this event carries (a delta, or a finished transcript), if any."""
        for key in ("delta", "transcript", "text"):
            value = self.raw.get(key)
            if isinstance(value, str):
                return value
        return None

    def to_dict(self) -> dict[str, Any]:
        """A mutable copy of the wire object (for code that wants a plain dict)."""
        return dict(self.raw)


@dataclass(frozen=True)
class SessionCreated(RealtimeEvent):
    @property
    def session(self) -> Mapping[str, Any]:
        value = self.raw.get("session")
        return value if isinstance(value, Mapping) else {}

    @property
    def capabilities(self) -> Mapping[str, Any] | None:
        value = self.session.get("capabilities")
        return value if isinstance(value, Mapping) else None

    @property
    def resume_token(self) -> str | None:
        value = self.raw.get("resume_token")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ResponseCreated(RealtimeEvent):
    pass


@dataclass(frozen=True)
class AudioDelta(RealtimeEvent):
    @property
    def audio(self) -> bytes:
        return base64.b64decode(str(self.raw.get("delta") or ""))


@dataclass(frozen=True)
class TranscriptDelta(RealtimeEvent):
    """``response.output_audio_transcript.delta``: words of what the assistant says."""


@dataclass(frozen=True)
class TextDelta(RealtimeEvent):
    """``response.output_text.delta``: a text-only answer's words."""


@dataclass(frozen=True)
class ResponseDone(RealtimeEvent):
    @property
    def status(self) -> str | None:
        response = self.raw.get("response")
        value = response.get("status") if isinstance(response, Mapping) else None
        return None if value is None else str(value)


@dataclass(frozen=True)
class SessionEnded(RealtimeEvent):
    """``session.closed`` or ``session.expired``: the session is over; nothing follows."""

    @property
    def reason(self) -> str | None:
        value = self.raw.get("reason")
        return None if value is None else str(value)


@dataclass(frozen=True)
class ErrorEvent(RealtimeEvent):
    @property
    def error(self) -> Mapping[str, Any]:
        value = self.raw.get("error")
        if isinstance(value, Mapping):
            return value
        # The flat handshake shape: {"type": "error", "error": "message", "code": ...}.
        return {"message": str(value), "code": self.raw.get("code")}

    @property
    def code(self) -> str | None:
        value = self.error.get("code")
        return None if value is None else str(value)

    @property
    def message(self) -> str:
        return str(self.error.get("message") or self.error)

    @property
    def related_event_id(self) -> str | None:
        """The ``event_id`` of the client event the server rejected, if it names one."""
        value = self.error.get("event_id")
        return None if value is None else str(value)


def protocol_error(event: ErrorEvent, prefix: str = "the server sent an error") -> ProtocolError:
    """The exception a call raises for ``event``: its message, code and the rejected ``event_id``."""
    return ProtocolError(f"{prefix}: {event.message} ({event.code})", code=event.code,
                         event_id=event.related_event_id, error=dict(event.error))


@dataclass(frozen=True)
class ConnectionResumed(RealtimeEvent):
    """The client reconnected and the server resumed the session (``raw`` is its ``session.resumed``).

    Delivered once per resume, before the replayed events; ``attempt`` counts the tries it took.
    """

    attempt: int = 1

    @property
    def attachment_generation(self) -> int | None:
        value = self.raw.get("attachment_generation")
        return value if isinstance(value, int) else None


def announced_end(event: RealtimeEvent) -> SessionClosed | None:
    """The end of the session that ``event`` announces (None for an event that is not one)."""
    if isinstance(event, SessionEnded):
        reason = event.reason or "no reason given"
        return SessionClosed(f"the server ended the session ({event.type}: {reason})", reason=reason)
    if event.type == "session.replaced":
        return SessionClosed("another connection took this session over", reason="replaced")
    return None


_TYPES: dict[str, type[RealtimeEvent]] = {
    "session.created": SessionCreated,
    "response.created": ResponseCreated,
    "response.output_audio.delta": AudioDelta,
    "response.output_audio_transcript.delta": TranscriptDelta,
    "response.output_text.delta": TextDelta,
    "response.done": ResponseDone,
    "session.closed": SessionEnded,
    "session.expired": SessionEnded,
    "error": ErrorEvent,
}


def parse_event(raw: Mapping[str, Any], received_at: float | None = None) -> RealtimeEvent:
    """The typed view of one wire object (which this function does not copy: hand it a fresh one)."""
    kind = str(raw.get("type") or "")
    seq = raw.get("server_event_seq")
    event_id = raw.get("event_id")
    return _TYPES.get(kind, RealtimeEvent)(
        type=kind,
        event_id=None if event_id is None else str(event_id),
        server_event_seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
        raw=MappingProxyType(dict(raw)),
        received_at=time.monotonic() if received_at is None else received_at,
    )


def resumed_event(raw: Mapping[str, Any], attempt: int) -> ConnectionResumed:
    return ConnectionResumed(type=str(raw.get("type") or "session.resumed"), event_id=raw.get("event_id"),
                             server_event_seq=None, raw=MappingProxyType(dict(raw)),
                             received_at=time.monotonic(), attempt=attempt)


def decode_frame(message: str | bytes) -> RealtimeEvent | None:
    """The typed event in one text frame; None (logged) for one that is not a JSON object, which must not
    end the session."""
    try:
        raw = json.loads(message)
    except ValueError:
        log.warning("ignored a frame that is not JSON: %r", message[:80])
        return None
    return parse_event(raw) if isinstance(raw, dict) else None


def session_audio_rate(session: Mapping[str, Any], direction: str) -> int:
    """The PCM rate of the session's ``input`` or ``output`` audio (the wire rate when it names none)."""
    audio = session.get("audio")
    part = audio.get(direction) if isinstance(audio, Mapping) else None
    fmt = part.get("format") if isinstance(part, Mapping) else None
    rate = fmt.get("rate") if isinstance(fmt, Mapping) else None
    return rate if isinstance(rate, int) and rate > 0 else WIRE_RATE
