"""The small interface between a session and the connection it is served over."""

from __future__ import annotations

import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol

from fastapi import WebSocket

from speech_to_speech.audio.samples import Int16Audio
from speech_to_speech.protocol import NORMAL_CLOSURE


def dumps(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


class MediaTrack(Protocol):
    """Audio that leaves on a media track (WebRTC) instead of inside events."""

    def play(self, samples: Int16Audio) -> None:
        """Queue 24 kHz PCM16 for playback, paced by the track."""

    def clear(self) -> None:
        """Drop what is queued and not yet played (barge-in, cancel, output_audio_buffer.clear)."""

    def set_play_listener(self, listener: Callable[[int], None] | None) -> None:
        """Call ``listener(n)`` (on the event loop) as ``n`` more queued samples are played out."""


class Transport(ABC):
    """Where a session's server events go, as text frames serialised once when they were emitted.

    The send loop never knows which transport it feeds.
    """

    # None: audio travels inside events (WebSocket); else it is played on this track (WebRTC).
    media: MediaTrack | None = None
    # The close code the client sent when it went (None: no close frame was read, or not yet).
    peer_close_code: int | None = None

    @abstractmethod
    async def send_text(self, text: str) -> None: ...

    @abstractmethod
    async def close(self, code: int = NORMAL_CLOSURE, reason: str = "") -> None: ...


class WebSocketTransport(Transport):
    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket

    async def send_text(self, text: str) -> None:
        await self.websocket.send_text(text)

    async def close(self, code: int = NORMAL_CLOSURE, reason: str = "") -> None:
        with contextlib.suppress(RuntimeError):  # already closed
            await self.websocket.close(code=code, reason=reason)
