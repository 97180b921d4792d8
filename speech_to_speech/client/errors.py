"""The client's user-facing failures: each one prints as a single clear line."""

from __future__ import annotations


class ClientError(Exception):
    """A failure the CLI reports as one line (no traceback) and exits non-zero."""


class AudioDeviceError(ClientError):
    """No usable microphone or speaker (or PortAudio itself is missing)."""


class ServerUnreachable(ClientError):
    """Nothing answered at the URL's host and port."""


class WrongURL(ClientError):
    """Something answered, but not a Realtime WebSocket endpoint."""


class SessionLimitReached(ClientError):
    """The server is at its session limit (every pipeline is busy)."""


class SessionRejected(ClientError):
    """The server refused our session.update (a bad voice, threshold, tool schema, ...)."""


# ---------------------------------------------------------------- the RealtimeClient library


class RealtimeClientError(ClientError):
    """Any failure of a ``RealtimeClient`` call (a ClientError, so `talk` prints it as one line)."""


class ProtocolError(RealtimeClientError):
    """The server answered a call with an ``error`` event: its ``code``, message and the rejected ``event_id``."""

    def __init__(self, message: str, *, code: str | None = None, event_id: str | None = None,
                 error: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.event_id = event_id
        self.error = dict(error or {})


class ConnectionLost(RealtimeClientError):
    """The connection dropped and could not be resumed (no resume support, reconnect off, or every try failed)."""


class ResumeFailed(ConnectionLost):
    """The server refused ``session.resume`` (``session_resume_expired``, ``session_resume_invalid_token``)."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class SessionClosed(RealtimeClientError):
    """The session ended (``session.closed``, ``session.expired``, replaced) while a call waited on it."""

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class WaitTimeout(RealtimeClientError, TimeoutError):
    """A wait (``wait_for``, ``ResponseHandle.wait``, the handshake) ran out of time."""
