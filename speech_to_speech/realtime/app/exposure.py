"""Whether ``serve`` may listen where it was told: no open server on a network without a key."""

from __future__ import annotations

import os
from collections.abc import Mapping

from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.app.access import is_loopback

API_KEY_ENV = "SPEECH_TO_SPEECH_API_KEY"


def with_env_api_key(settings: ServerSettings, environ: Mapping[str, str] = os.environ) -> ServerSettings:
    """``settings`` with the key from ``SPEECH_TO_SPEECH_API_KEY`` when no ``--api_key`` was given."""
    key = environ.get(API_KEY_ENV)
    if settings.server.api_key or not key:
        return settings
    return settings.updated(api_key=key)


def exposure_problem(settings: ServerSettings) -> str | None:
    """Why the server must not start with ``settings``, or None."""
    if is_loopback(settings.server.host) or settings.server.api_key or settings.server.allow_unauthenticated:
        return None
    return (f"--host {settings.server.host} accepts connections from other machines, and no API key is set: "
            f"give one with --api_key or {API_KEY_ENV}, or pass --allow_unauthenticated to serve openly")
