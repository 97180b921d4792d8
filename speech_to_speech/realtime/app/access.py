"""Who may use the server: an API key, browser Origins, and how often one address may connect.

:class:`AccessPolicy` is plain ASGI middleware around the whole app, so every
route (HTTP, WebSocket, WebRTC's ``POST /v1/realtime/calls``) passes the
same checks before any handler runs:

- with an API key, a request must carry ``Authorization: Bearer KEY``; a
  WebSocket may carry it instead as the ``openai-insecure-api-key.KEY``
  subprotocol browsers use. ``/health`` and ``/ready`` are open (probes and
  load balancers carry no key), and so are the demo page's static files
  (they hold no secret; the page asks for the key);
- a request that carries an ``Origin`` (a browser) must come from the server's
  own origin, an allowed one, or, when the server listens on loopback and no
  list was given, a loopback page. Any other web page in a user's browser is
  refused, so it cannot drive a server on localhost.

A refused WebSocket is answered at the handshake (HTTP 401/403), not
accepted and closed. The key never appears in a log or a response.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from speech_to_speech.protocol import POLICY_VIOLATION
from speech_to_speech.protocol.error_codes import INVALID_API_KEY, ORIGIN_NOT_ALLOWED
from speech_to_speech.protocol.server_events.session import ErrorEvent, error_event

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

KEY_SUBPROTOCOL = "openai-insecure-api-key."
OPEN_PATHS = ("/health", "/ready")
OPEN_PREFIXES = ("/demo",)
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, maybe in brackets) is this machine only."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}


def _origin_key(origin: str) -> str:
    parts = urlsplit(origin.strip().lower())
    port = parts.port or {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme, 0)
    return f"{parts.scheme}://{parts.hostname}:{port}"


class AccessPolicy:
    def __init__(self, app: ASGIApp, *, api_key: str | None, allowed_origins: Sequence[str] | None,
                 loopback_bind: bool) -> None:
        self.app = app
        self._key = api_key.encode() if api_key else None
        self._any_origin = allowed_origins is not None and "*" in allowed_origins
        self._origins = {_origin_key(o) for o in allowed_origins or () if o != "*"}
        # With no list given, pages on this machine may use a server that only this machine reaches.
        self._loopback_origins = allowed_origins is None and loopback_bind

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, code, message = refusal
        await _deny(scope, send, status, code, message)

    def refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        """(HTTP status, error code, message) when ``scope`` may not pass, else None."""
        path = scope.get("path", "")
        if path in OPEN_PATHS:
            return None
        headers = _headers(scope)
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, headers.get("host", "")):
            return 403, ORIGIN_NOT_ALLOWED, "Requests from this Origin are not allowed (see --allowed_origins)"
        if self._key is None or (path.startswith(OPEN_PREFIXES) and scope["type"] == "http"):
            return None
        if not self._key_matches(headers, scope):
            return 401, INVALID_API_KEY, "A valid API key is required: send 'Authorization: Bearer KEY'"
        return None

    def _origin_allowed(self, origin: str, host: str) -> bool:
        if self._any_origin:
            return True
        parts = urlsplit(origin.strip().lower())
        if not parts.scheme or not parts.hostname:
            return False  # "null" (a file or sandboxed page) and garbage
        key = _origin_key(origin)
        if key in self._origins:
            return True
        if parts.netloc == host.lower():
            return True  # the server's own pages (the demo)
        return self._loopback_origins and is_loopback(parts.hostname)

    def _key_matches(self, headers: dict[str, str], scope: Scope) -> bool:
        assert self._key is not None
        candidates: list[str] = []
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            candidates.append(auth[7:].strip())
        if scope["type"] == "websocket":
            candidates += [p[len(KEY_SUBPROTOCOL):] for p in scope.get("subprotocols") or []
                           if p.startswith(KEY_SUBPROTOCOL)]
        return any(hmac.compare_digest(c.encode(), self._key) for c in candidates)


async def _deny(scope: Scope, send: Send, status: int, code: str, message: str,
                headers: Sequence[tuple[str, str]] = ()) -> None:
    await deny(scope, send, status, error_event(code, message),
               [*headers, *((("www-authenticate", "Bearer"),) if status == 401 else ())])


async def deny(scope: Scope, send: Send, status: int, body: ErrorEvent,
               headers: Sequence[tuple[str, str]] = ()) -> None:
    """Answer ``scope`` with an HTTP error: a plain response, or a WebSocket handshake refusal."""
    payload = json.dumps(body).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                   *((k.encode(), v.encode()) for k, v in headers)]
    if scope["type"] == "websocket":
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": POLICY_VIOLATION})  # the server can only say 403
            return
        prefix = "websocket."
    else:
        prefix = ""
    await send({"type": f"{prefix}http.response.start", "status": status, "headers": raw_headers})
    await send({"type": f"{prefix}http.response.body", "body": payload})
