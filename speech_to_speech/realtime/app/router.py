"""The FastAPI app: ``/v1/realtime`` (WebSocket), with the HTTP endpoints (endpoints.py) and WebRTC's beside it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect

from speech_to_speech import __version__
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import ABNORMAL_CLOSURE, NO_STATUS_RECEIVED, TRY_AGAIN_LATER
from speech_to_speech.realtime.app.access import AccessPolicy, deny, is_loopback
from speech_to_speech.realtime.app.context import ServerContext, build_context
from speech_to_speech.realtime.app.demo import mount_demo
from speech_to_speech.realtime.app.endpoints import add_http_routes
from speech_to_speech.realtime.connection.transport import Transport, WebSocketTransport
from speech_to_speech.realtime.metrics import ServerMetrics
from speech_to_speech.realtime.service.session_events import ResumeRequest
from speech_to_speech.realtime.sessions.attachment import Attachment
from speech_to_speech.realtime.sessions.gate import Refusal
from speech_to_speech.realtime.sessions.live import LiveSession
from speech_to_speech.realtime.sessions.move import hand_over, take_over
from speech_to_speech.realtime.sessions.runner import TakeOver, refuse, resume_session, serve_session
from speech_to_speech.realtime.webrtc.signalling import add_webrtc_routes
from speech_to_speech.realtime.wire.languages import LanguageService
from speech_to_speech.units.pool import PipelinePool

log = logging.getLogger(__name__)

async def _websocket_messages(websocket: WebSocket, transport: WebSocketTransport) -> AsyncIterator[str | bytes]:
    """The client's frames; the close code it went with is left on ``transport`` (a goodbye or a drop)."""
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                code = message.get("code")
                # uvicorn reports a connection lost without a close frame as 1005 with no reason (a close
                # frame without a code comes with one): call it what RFC 6455 does, 1006, a drop.
                dropped = code == NO_STATUS_RECEIVED and "reason" not in message
                transport.peer_close_code = ABNORMAL_CLOSURE if dropped else code
                return
            payload = message.get("text")
            if payload is None:
                payload = message.get("bytes")
            if payload is not None:
                yield payload
    except WebSocketDisconnect as disconnect:
        transport.peer_close_code = disconnect.code
        return


async def _refuse_handshake(websocket: WebSocket, refusal: Refusal, subprotocol: str | None,
                            metrics: ServerMetrics) -> None:
    """Say no to a WebSocket in the way its client can read.

    A browser (its handshake always carries ``Origin``; other clients send none)
    cannot read the HTTP status of a refused handshake, only that it failed: it
    gets the socket, the ``error`` event with ``retry_after_s``, and close code
    1013 (try again later) whose reason says when. Every other client gets the
    HTTP status with ``Retry-After``: LiveKit's plugin would reconnect at once,
    without end, to a socket that opens and closes.
    """
    if "origin" not in websocket.headers:
        await deny(websocket.scope, websocket.send, refusal.status, refusal.event, list(refusal.headers.items()))
        return
    await websocket.accept(subprotocol=subprotocol)  # the subprotocol the browser offered, or it fails the socket
    reason = f"{refusal.code}: try again in {refusal.retry_after_s} s"
    await refuse(WebSocketTransport(websocket), refusal.event, TRY_AGAIN_LATER, reason, metrics)


def client_address(scope: Any) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def shared_sessions(app: FastAPI, context: ServerContext) -> TakeOver:
    """Serve sessions with other replicas: hand ours over when asked, take theirs over on a resume."""
    store, registry, sessions = context.store, context.registry, context.sessions

    async def listen() -> None:  # a coroutine function: Starlette would not await what a lambda returns
        await store.start(hand_over(registry, store))

    app.router.add_event_handler("startup", listen)
    app.router.add_event_handler("shutdown", store.close)  # the sessions' keys stay: they resume elsewhere

    def started(session: LiveSession) -> None:
        sessions.add(session.closer)
        session.finished.add_done_callback(lambda _: sessions.discard(session.closer))

    async def take(transport: Transport, request: ResumeRequest) -> tuple[LiveSession, Attachment]:
        return await take_over(transport, request, store=store, registry=registry, gate=context.gate,
                               settings=context.settings, metrics=context.metrics, on_session=started)

    return take


async def serve_websocket(websocket: WebSocket, context: ServerContext, taker: TakeOver | None) -> None:
    """``/v1/realtime``: a new session on a unit from the gate, or (``?autostart=0``) a resumed one."""
    address = client_address(websocket.scope)
    offered = websocket.scope.get("subprotocols") or []
    subprotocol = "realtime" if "realtime" in offered else None
    transport = WebSocketTransport(websocket)
    # Resume-only: no unit, no session.created; still one of its address's sessions.
    resume_only = websocket.query_params.get("autostart", "1").lower() in ("0", "false", "off")
    settings, metrics = context.settings, context.metrics
    async with context.gate.session(address, unit=not resume_only) as entry:
        if isinstance(entry, Refusal):
            await _refuse_handshake(websocket, entry, subprotocol, metrics)
            return
        await websocket.accept(subprotocol=subprotocol)
        incoming = _websocket_messages(websocket, transport)
        if resume_only:
            await resume_session(transport, incoming, context.registry, settings, metrics=metrics, take_over=taker)
            return
        await serve_session(transport, incoming, entry.lease, settings,
                            validate_language=context.languages.validate_session_language, metrics=metrics,
                            sessions=context.sessions, registry=context.registry, store=context.shared_store)


def create_app(pool: PipelinePool, settings: ServerSettings, languages: LanguageService) -> FastAPI:
    app = FastAPI(title="speech-to-speech", version=__version__)
    demo = settings.server.demo and mount_demo(app)
    context = build_context(pool, settings, languages, demo=demo)
    app.state.context = context
    app.state.gate, app.state.readiness = context.gate, context.readiness  # for embedding code (context.py)
    taker = shared_sessions(app, context) if context.store.shared else None
    app.add_middleware(AccessPolicy, api_key=settings.server.api_key, allowed_origins=settings.server.allowed_origins,
                       loopback_bind=is_loopback(settings.server.host))
    add_http_routes(app, context)
    # WebRTC: POST /v1/realtime/calls (aiortc is imported at the first call).
    add_webrtc_routes(app, pool, settings, languages, context.metrics, gate=context.gate, sessions=context.sessions)

    @app.websocket("/v1/realtime")
    async def realtime(websocket: WebSocket) -> None:
        await serve_websocket(websocket, context, taker)

    return app
