"""The session lifecycle client events: heartbeat, event_ack, close, and resume.

They are parsed and checked like every other client event (service/client_events.py
serves them beside ``session.update``), so a malformed one gets an ``error`` naming its
``event_id``. What they act on is the live session around the service (its
journal, its socket), reached through :class:`SessionControl`; a service
without one (no resumable session around it) refuses them.

``session.resume`` is only valid as the first event of a socket opened with
``?autostart=0``: :func:`resume_request` checks it there, before any
session is attached; anywhere else it is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from speech_to_speech.protocol import error_codes
from speech_to_speech.protocol.resume import LAST_FINISHED_RESPONSE_ID
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.events import ClientEvent

RESUME = "session.resume"


class SessionControl(Protocol):
    """What the lifecycle events may ask of the session that owns a service."""

    def heartbeat(self) -> None:
        """Answer ``session.heartbeat_ack`` on the current socket."""

    def event_ack(self, seq: int) -> None:
        """The client has every event up to ``seq``."""

    def close_by_client(self) -> None:
        """``session.closed``, then the socket closes and the session ends."""

    def client_event_taken(self) -> None:
        """A client event that a resume would count was taken (the store should write the session)."""


class ControlledService(Protocol):
    """The one thing these events need of what they act on: the session around it, if any."""

    @property
    def session_control(self) -> SessionControl | None: ...


@dataclass(frozen=True)
class ResumeRequest:
    session_id: str
    resume_token: str
    last_received_server_event_seq: int
    event_id: str | None
    last_finished_response_id: str | None = None  # protocol/resume.py


def _seq(data: dict[str, Any], name: str, event_id: str | None, default: int | None = None) -> int:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RealtimeError(error_codes.INVALID_REQUEST, f"'{name}' must be an integer >= 0", param=name,
                            event_id=event_id)
    return value


def _string(data: dict[str, Any], name: str, event_id: str | None) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value or len(value) > 256:
        raise RealtimeError(error_codes.INVALID_REQUEST, f"'{name}' must be a non-empty string", param=name,
                            event_id=event_id)
    return value


def resume_request(event: ClientEvent) -> ResumeRequest:
    """The checked fields of a ``session.resume`` (raises RealtimeError for anything else)."""
    if event.type != RESUME:
        raise RealtimeError(error_codes.SESSION_RESUME_REQUIRED,
                            f"A socket opened with ?autostart=0 must start with {RESUME}, not {event.type}",
                            param="type", event_id=event.event_id)
    data, event_id = event.data, event.event_id
    finished = data.get(LAST_FINISHED_RESPONSE_ID)
    return ResumeRequest(_string(data, "session_id", event_id), _string(data, "resume_token", event_id),
                         _seq(data, "last_received_server_event_seq", event_id, 0), event_id,
                         None if finished is None else _string(data, LAST_FINISHED_RESPONSE_ID, event_id))


def _control(service: ControlledService, event: ClientEvent) -> SessionControl:
    control = service.session_control
    if control is None:
        raise RealtimeError(error_codes.INVALID_EVENT_FOR_TRANSPORT, f"{event.type} is not served here")
    return control


def session_heartbeat(service: ControlledService, event: ClientEvent) -> None:
    _control(service, event).heartbeat()


def session_event_ack(service: ControlledService, event: ClientEvent) -> None:
    seq = _seq(event.data, "server_event_seq", event.event_id)
    _control(service, event).event_ack(seq)


def session_close(service: ControlledService, event: ClientEvent) -> None:
    _control(service, event).close_by_client()


def session_resume(service: ControlledService, event: ClientEvent) -> None:
    raise RealtimeError(error_codes.INVALID_REQUEST,
                        f"{RESUME} is only accepted as the first event of a socket opened with ?autostart=0",
                        param="type")


SESSION_EVENTS: dict[str, Callable[[ControlledService, ClientEvent], None]] = {
    "session.heartbeat": session_heartbeat,
    "session.event_ack": session_event_ack,
    "session.close": session_close,
    RESUME: session_resume,
}
