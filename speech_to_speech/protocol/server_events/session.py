"""The session's own events: created, updated, errors, and our lifecycle extensions (docs/sessions.md).

``session.resumed``, ``session.replaced`` and ``session.heartbeat_ack`` go to one
socket and are never journaled; ``session.closed``, ``session.expired`` and
``session.resync_required`` are session events like any other.
"""

from typing import Literal, NotRequired, TypedDict

from speech_to_speech.protocol.error_types import INVALID_REQUEST_ERROR
from speech_to_speech.protocol.server_events.shapes import ErrorDetail, Session


class SessionAttachment(TypedDict):
    """What ``session.created`` says of the socket it opens on (sessions/live.py)."""

    session_id: str
    attachment_generation: int
    resume_token: NotRequired[str]  # only where the session can be resumed


class SessionCreated(TypedDict):
    type: Literal["session.created"]
    session_id: NotRequired[str]
    attachment_generation: NotRequired[int]
    resume_token: NotRequired[str]
    session: Session


class SessionUpdated(TypedDict):
    type: Literal["session.updated"]
    session: Session


class ErrorEvent(TypedDict):
    type: Literal["error"]
    error: ErrorDetail


class SessionResumed(TypedDict):
    type: Literal["session.resumed"]
    session_id: str
    session: Session
    attachment_generation: int
    resume_token: str
    last_client_event_id: str | None  # protocol/resume.py


class SessionReplaced(TypedDict):
    type: Literal["session.replaced"]
    session_id: str
    attachment_generation: int


class SessionHeartbeatAck(TypedDict):
    type: Literal["session.heartbeat_ack"]
    session_id: str


class SessionClosed(TypedDict):
    type: Literal["session.closed"]
    session_id: str
    reason: str
    details: NotRequired[dict[str, int]]  # a close for a slow client: the limits it passed


class SessionExpired(TypedDict):
    type: Literal["session.expired"]
    session_id: str
    reason: str


class SessionResyncRequired(TypedDict):
    type: Literal["session.resync_required"]
    session_id: str
    reason: str


def session_created(session: Session, attachment: SessionAttachment | None = None) -> SessionCreated:
    if attachment is None:
        return {"type": "session.created", "session": session}
    return {"type": "session.created", **attachment, "session": session}


def session_updated(session: Session) -> SessionUpdated:
    return {"type": "session.updated", "session": session}


def error_event(code: str, message: str, *, type: str = INVALID_REQUEST_ERROR, param: str | None = None,
          event_id: str | None = None, retry_after_s: int | None = None) -> ErrorEvent:
    """``event_id``: the client event refused; ``retry_after_s``: when a refused session may try again."""
    detail: ErrorDetail = {"type": type, "code": code, "message": message, "param": param, "event_id": event_id}
    if retry_after_s is not None:
        detail["retry_after_s"] = retry_after_s
    return {"type": "error", "error": detail}


def session_resumed(session_id: str, session: Session, attachment_generation: int, resume_token: str,
                    last_client_event_id: str | None) -> SessionResumed:
    return {"type": "session.resumed", "session_id": session_id, "session": session,
            "attachment_generation": attachment_generation, "resume_token": resume_token,
            "last_client_event_id": last_client_event_id}


def session_replaced(session_id: str, attachment_generation: int) -> SessionReplaced:
    return {"type": "session.replaced", "session_id": session_id, "attachment_generation": attachment_generation}


def session_heartbeat_ack(session_id: str) -> SessionHeartbeatAck:
    return {"type": "session.heartbeat_ack", "session_id": session_id}


def session_closed(session_id: str, reason: str, details: dict[str, int] | None = None) -> SessionClosed:
    event: SessionClosed = {"type": "session.closed", "session_id": session_id, "reason": reason}
    if details is not None:
        event["details"] = details
    return event


def session_expired(session_id: str, reason: str) -> SessionExpired:
    return {"type": "session.expired", "session_id": session_id, "reason": reason}


def session_resync_required(session_id: str, reason: str) -> SessionResyncRequired:
    return {"type": "session.resync_required", "session_id": session_id, "reason": reason}
