"""The FastAPI app: ``/v1/realtime`` (WebSocket) and the HTTP endpoints beside it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response

from speech_to_speech import __version__
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import ABNORMAL_CLOSURE, NO_STATUS_RECEIVED, TRY_AGAIN_LATER
from speech_to_speech.realtime.app.access import AccessPolicy, deny, is_loopback
from speech_to_speech.realtime.app.demo import mount_demo
from speech_to_speech.realtime.app.readiness import Readiness, admission_check, free_unit_check, reachability_check
from speech_to_speech.realtime.connection.transport import Transport, WebSocketTransport
from speech_to_speech.realtime.metrics import CONTENT_TYPE, ServerMetrics
from speech_to_speech.realtime.service.capabilities import session_capabilities
from speech_to_speech.realtime.service.session_events import ResumeRequest
from speech_to_speech.realtime.sessions.attachment import Attachment
from speech_to_speech.realtime.sessions.gate import Refusal, SessionGate
from speech_to_speech.realtime.sessions.live import LiveSession
from speech_to_speech.realtime.sessions.move import hand_over, take_over
from speech_to_speech.realtime.sessions.registry import SessionRegistry
from speech_to_speech.realtime.sessions.runner import (
    LiveSessions,
    TakeOver,
    refuse,
    resume_session,
    serve_session,
)
from speech_to_speech.realtime.sessions.store import SessionStore, open_store
from speech_to_speech.realtime.webrtc.signalling import add_webrtc_routes
from speech_to_speech.realtime.wire.languages import LanguageService
from speech_to_speech.units.pool import PipelinePool

log = logging.getLogger(__name__)

MODEL_ID = "speech-to-speech"


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


def shared_sessions(app: FastAPI, store: SessionStore, registry: SessionRegistry[LiveSession],
                    sessions: LiveSessions, metrics: ServerMetrics) -> TakeOver:
    """Serve sessions with other replicas: hand ours over when asked, take theirs over on a resume."""
    async def listen() -> None:  # a coroutine function: Starlette would not await what a lambda returns
        await store.start(hand_over(registry, store))

    app.router.add_event_handler("startup", listen)
    app.router.add_event_handler("shutdown", store.close)  # the sessions' keys stay: they resume elsewhere

    def started(session: LiveSession) -> None:
        sessions.add(session.closer)
        session.finished.add_done_callback(lambda _: sessions.discard(session.closer))

    async def take(transport: Transport, request: ResumeRequest) -> tuple[LiveSession, Attachment]:
        state = app.state
        return await take_over(transport, request, store=store, registry=registry, gate=state.gate,
                               settings=state.settings, metrics=metrics, on_session=started)

    return take


def create_app(pool: PipelinePool, settings: ServerSettings, languages: LanguageService) -> FastAPI:
    app = FastAPI(title="speech-to-speech", version=__version__)
    app.state.pool = pool
    app.state.settings = settings
    app.state.languages = languages
    app.state.metrics = metrics = ServerMetrics(pool)
    app.state.sessions = sessions = LiveSessions()
    # Resumable sessions by id: a socket opened with ?autostart=0 takes one over (docs/sessions.md).
    app.state.registry = registry = SessionRegistry[LiveSession]()
    # Who gets a unit, for WebSocket and WebRTC alike (sessions/gate.py).
    app.state.gate = gate = SessionGate(pool, settings, evict=registry.evict_oldest)
    # Where other replicas find these sessions (--session_store; memory: nowhere), realtime/sessions/store/.
    app.state.store = store = open_store(settings, on_write=metrics.store_wrote)
    take_over = shared_sessions(app, store, registry, sessions, metrics) if store.shared else None
    # What GET /ready asks; app.state.readiness.register(check) adds a check (app/readiness.py).
    app.state.readiness = readiness = Readiness([
        admission_check(gate), free_unit_check(pool, lambda: registry.oldest_detached() is not None)])
    if store.shared:  # a replica cut off from the shared sessions would take ones it cannot hand on
        readiness.register(reachability_check("session store", store.reachable))
    app.add_middleware(AccessPolicy, api_key=settings.server.api_key, allowed_origins=settings.server.allowed_origins,
                       loopback_bind=is_loopback(settings.server.host))

    @app.get("/health")
    def health() -> JSONResponse:
        slots = pool.status()
        healthy = any(slot.healthy for slot in slots)
        return JSONResponse({"status": "ok" if healthy else "degraded"}, status_code=200 if healthy else 503)

    @app.get("/ready")
    async def ready() -> JSONResponse:
        reasons = await readiness.reasons()
        if reasons:
            return JSONResponse({"status": "unavailable", "reasons": reasons}, status_code=503)
        return JSONResponse({"status": "ready"})

    @app.get("/v1/pool")
    def pool_status() -> dict[str, Any]:
        slots = pool.status()
        return {
            "size": len(slots),
            "sizing": pool.sizing,  # how the count was chosen (--num_pipelines auto: the machine's share)
            "available": sum(1 for s in slots if s.state == "idle" and s.healthy),
            "pipelines": [
                {"index": s.index, "state": s.state, "healthy": s.healthy, "rebuilds": s.rebuilds} for s in slots
            ],
        }

    @app.get("/metrics")
    def prometheus_metrics() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{
                "id": MODEL_ID,
                "object": "model",
                "owned_by": "speech-to-speech",
                "pipeline": {"vad": settings.vad.backend, "stt": settings.stt.model or settings.stt.backend,
                             "llm": settings.llm.model or settings.llm.backend,
                             "tts": settings.tts.model or settings.tts.backend},
            }],
        }

    @app.get("/v1/realtime/capabilities")
    def capabilities() -> dict[str, Any]:
        # What session.created will say, per transport, for a client to read before it connects.
        turns = any(unit.detects_turns for unit in pool.units())
        sessions = {name: session_capabilities(resumable=name == "websocket", media_track=name == "webrtc",
                                               multi_session=pool.size > 1, turn_detector=turns)
                    for name in ("websocket", "webrtc")}
        voices = next((unit.voices for unit in pool.units()), None)
        if voices is not None:  # session.created lists them too (RealtimeService.start)
            sessions = {name: {**offered, "voices": list(voices)} for name, offered in sessions.items()}
        return {**languages.capabilities(pool.size, voices), "sessions": sessions}

    # WebRTC: POST /v1/realtime/calls (aiortc is imported at the first call).
    add_webrtc_routes(app, pool, settings, languages, metrics)

    @app.websocket("/v1/realtime")
    async def realtime(websocket: WebSocket) -> None:
        address = client_address(websocket.scope)
        offered = websocket.scope.get("subprotocols") or []
        subprotocol = "realtime" if "realtime" in offered else None
        transport = WebSocketTransport(websocket)
        # Resume-only: no unit, no session.created; still one of its address's sessions.
        resume_only = websocket.query_params.get("autostart", "1").lower() in ("0", "false", "off")
        async with gate.session(address, unit=not resume_only) as entry:
            if isinstance(entry, Refusal):
                await _refuse_handshake(websocket, entry, subprotocol, metrics)
                return
            await websocket.accept(subprotocol=subprotocol)
            incoming = _websocket_messages(websocket, transport)
            if resume_only:
                await resume_session(transport, incoming, registry, settings, metrics=metrics, take_over=take_over)
                return
            await serve_session(transport, incoming, entry.lease, settings,
                                validate_language=languages.validate_session_language, metrics=metrics,
                                sessions=sessions, registry=registry, store=store if store.shared else None)

    app.state.demo = settings.server.demo and mount_demo(app)
    return app
