"""InlineRealtimeClient: the RealtimeClient API against a server app in this process, with no socket.

The app is driven through ASGI directly: a WebSocket scope whose frames are
handed over in memory, so the session runs exactly the code a network client
reaches (router, access policy, session runner) without a port, a thread or
a serialisation hop beyond the JSON text itself. There is no transport to
lose, so the inline client has no reconnect, resume, heartbeat or event
acknowledgement machinery.

```python
app, pool = build_app(settings)
async with InlineRealtimeClient(app) as client:
    ...
```
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from speech_to_speech.client.errors import ClientError, SessionLimitReached, WrongURL
from speech_to_speech.client.link import Connector, Link, LinkClosed
from speech_to_speech.client.realtime_client import RealtimeClient
from speech_to_speech.protocol import INTERNAL_ERROR, NORMAL_CLOSURE

INLINE_URL = "ws://inline/v1/realtime"
# How long closing waits for the app to finish its session (it releases its pipeline unit on the way).
APP_EXIT_TIMEOUT_S = 5.0

Message = dict[str, Any]


class AsgiLink:
    """A ``Link`` whose far end is an ASGI app's WebSocket handler, in this event loop."""

    def __init__(self, to_app: asyncio.Queue[Message], from_app: asyncio.Queue[Message]) -> None:
        self._to_app = to_app
        self._from_app = from_app
        self.app_task: asyncio.Task[None] | None = None
        self._closed: LinkClosed | None = None

    async def send(self, message: str) -> None:
        if self._closed is not None:
            raise self._closed
        await self._to_app.put({"type": "websocket.receive", "text": message})

    async def recv(self) -> str | bytes:
        if self._closed is not None:
            raise self._closed
        message = await self._from_app.get()
        kind = message.get("type")
        if kind == "websocket.send":
            text = message.get("text")
            return text if text is not None else bytes(message.get("bytes") or b"")
        self._closed = LinkClosed(int(message.get("code") or 1000), str(message.get("reason") or ""))
        raise self._closed

    async def close(self, code: int = NORMAL_CLOSURE, reason: str = "") -> None:
        if self._closed is None:
            self._closed = LinkClosed(code, reason)
        await self._to_app.put({"type": "websocket.disconnect", "code": code, "reason": reason})
        if self.app_task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self.app_task), APP_EXIT_TIMEOUT_S)

    def abort(self) -> None:
        if self._closed is None:
            self._closed = LinkClosed()
        self._to_app.put_nowait({"type": "websocket.disconnect", "code": 1006})


def asgi_connector(app: Any, *, api_key: str | None = None) -> Connector:
    """Opens in-memory WebSocket sessions on ``app`` (an ASGI app such as ``build_app``'s)."""

    async def open_link(url: str) -> Link:
        parts = urlsplit(url)
        headers = [(b"host", b"inline")]
        if api_key:
            headers.append((b"authorization", f"Bearer {api_key}".encode()))
        scope = {
            "type": "websocket", "asgi": {"version": "3.0"}, "http_version": "1.1", "scheme": "ws",
            "path": parts.path or "/v1/realtime", "raw_path": (parts.path or "/v1/realtime").encode(),
            "query_string": parts.query.encode(), "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 0), "server": ("inline", 0), "subprotocols": [],
            "extensions": {"websocket.http.response": {}}, "state": {},
        }
        to_app: asyncio.Queue[Message] = asyncio.Queue()
        from_app: asyncio.Queue[Message] = asyncio.Queue()
        link = AsgiLink(to_app, from_app)
        await to_app.put({"type": "websocket.connect"})

        async def receive() -> Message:
            return await to_app.get()

        async def send(message: Message) -> None:
            await from_app.put(message)

        async def run_app() -> None:
            try:
                await app(scope, receive, send)
            finally:  # whatever happened, the client side sees the end
                await from_app.put({"type": "websocket.close", "code": INTERNAL_ERROR, "reason": "the app ended"})

        link.app_task = asyncio.create_task(run_app(), name="inline-realtime-app")
        first = await from_app.get()
        if first.get("type") == "websocket.accept":
            return link
        await _refusal(first, from_app, url)
        raise AssertionError("unreachable")

    return open_link


async def _refusal(first: Message, from_app: asyncio.Queue[Message], url: str) -> None:
    """Raise the error for an app that refused the WebSocket (an HTTP answer, or a close before accept)."""
    if first.get("type") != "websocket.http.response.start":
        raise WrongURL(f"{url}: the app closed the WebSocket before accepting it (code {first.get('code')})")
    status = int(first.get("status") or 0)
    body = b""
    while True:
        part = await from_app.get()
        if part.get("type") != "websocket.http.response.body":
            break
        body += bytes(part.get("body") or b"")
        if not part.get("more_body"):
            break
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    error = payload.get("error") if isinstance(payload, Mapping) else None
    detail = f"{error.get('message')} (HTTP {status})" if isinstance(error, Mapping) else f"HTTP {status}"
    if status == 503:
        raise SessionLimitReached(f"the server is at its session limit: {detail}")
    raise ClientError(f"the app refused the session: {detail}")


class InlineRealtimeClient(RealtimeClient):
    """``RealtimeClient`` over ``asgi_connector(app)``: same API, no network, no reconnect machinery."""

    def __init__(self, app: Any, *, session: Mapping[str, Any] | None = None, api_key: str | None = None,
                 path: str = "/v1/realtime", handshake_timeout_s: float = 10.0, close_timeout_s: float = 2.0,
                 keep_responses: int = 16) -> None:
        super().__init__(f"ws://inline{path}", session=session, reconnect=None, heartbeat_interval_s=None,
                         event_ack_interval_s=None, handshake_timeout_s=handshake_timeout_s,
                         close_timeout_s=close_timeout_s, connect=asgi_connector(app, api_key=api_key),
                         keep_responses=keep_responses)
