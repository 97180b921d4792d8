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
