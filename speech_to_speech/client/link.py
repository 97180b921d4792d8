"""The RealtimeClient's view of a connection: text frames in and out, and how it ended.

A ``Connector`` opens one (``url -> Link``); the default one opens a WebSocket
with ``connection.connect`` (its one-line errors included), and tests or the
in-process client pass their own. Keeping the client behind this small
interface is what lets the same client code run over a socket or in memory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from speech_to_speech.client.connection import connect
from speech_to_speech.client.errors import ConnectionLost
from speech_to_speech.protocol import ABNORMAL_CLOSURE, NORMAL_CLOSURE

# RFC 6455 1006: the connection ended without a close frame (dropped, not closed).


class LinkClosed(Exception):
    """The connection is gone: ``code`` is the close code received (1006 when none was)."""

    def __init__(self, code: int = ABNORMAL_CLOSURE, reason: str = "") -> None:
        super().__init__(f"connection closed ({code}: {reason or 'no reason given'})")
        self.code = code
        self.reason = reason

    def lost(self) -> ConnectionLost:
        """This close as the client's error (what a call raises once the session cannot go on)."""
        return ConnectionLost(f"the server closed the connection (code {self.code}: "
                              f"{self.reason or 'no reason given'})")


class Link(Protocol):
    async def send(self, message: str) -> None:
        """Send one text frame; raises LinkClosed when the connection is gone."""

    async def recv(self) -> str | bytes:
        """The next frame; raises LinkClosed when the connection is gone."""

    async def close(self, code: int = NORMAL_CLOSURE, reason: str = "") -> None:
        """Close politely (bounded); never raises."""

    def abort(self) -> None:
        """Drop the connection at once, without a close frame (what a network failure looks like)."""


Connector = Callable[[str], Awaitable[Link]]


class WebSocketLink:
    """A ``Link`` over a ``websockets`` client connection."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection

    async def send(self, message: str) -> None:
        try:
            await self.connection.send(message)
        except ConnectionClosed as closed:
            raise _closed(closed) from None

    async def recv(self) -> str | bytes:
        try:
            return await self.connection.recv()
        except ConnectionClosed as closed:
            raise _closed(closed) from None

    async def close(self, code: int = NORMAL_CLOSURE, reason: str = "") -> None:
        try:
            await self.connection.close(code, reason)
        except Exception:  # noqa: BLE001 - closing a connection that already failed is fine
            self.abort()

    def abort(self) -> None:
        transport = self.connection.transport
        if transport is not None:
            transport.abort()


def _closed(closed: ConnectionClosed) -> LinkClosed:
    frame = closed.rcvd
    return LinkClosed(frame.code, frame.reason) if frame is not None else LinkClosed()


def websocket_connector(*, model: str | None = None, api_key: str | None = None,
                        timeout: float = 10.0) -> Connector:
    """Opens WebSockets as `talk` always has (``?model=``, bearer key, one-line errors)."""

    async def open_link(url: str) -> Link:
        return WebSocketLink(await connect(url, model=model, api_key=api_key, timeout=timeout))

    return open_link
