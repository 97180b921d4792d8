"""The small interface between a session and the connection it is served over."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from typing import Any

from fastapi import WebSocket

from speech_to_speech.realtime.service import dumps


class Transport(ABC):
    """Where a session's server events go. The send loop never knows which one it feeds."""

    # WebSocket carries audio inside events; WebRTC plays it on a media track.
    audio_in_events: bool = True

    @abstractmethod
    async def send_event(self, event: dict[str, Any]) -> None: ...

    @abstractmethod
    async def close(self, code: int = 1000, reason: str = "") -> None: ...


class WebSocketTransport(Transport):
    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket

    async def send_event(self, event: dict[str, Any]) -> None:
        await self.websocket.send_text(dumps(event))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        with contextlib.suppress(RuntimeError):  # already closed
            await self.websocket.close(code=code, reason=reason)
