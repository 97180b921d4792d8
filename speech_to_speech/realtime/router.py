"""The FastAPI app: ``/v1/realtime`` (WebSocket) and the HTTP endpoints beside it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response

from speech_to_speech import __version__
from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.pool import PipelinePool
from speech_to_speech.realtime import errors
from speech_to_speech.realtime.access import AccessPolicy, deny, is_loopback
from speech_to_speech.realtime.admission import ClientAdmission
from speech_to_speech.realtime.capabilities import session_capabilities
from speech_to_speech.realtime.demo import mount_demo
from speech_to_speech.realtime.languages import LanguageService
from speech_to_speech.realtime.live_session import LiveSession, evict_oldest
from speech_to_speech.realtime.metrics import CONTENT_TYPE, ServerMetrics
from speech_to_speech.realtime.session_registry import SessionRegistry
from speech_to_speech.realtime.session_runner import (
    LiveSessions,
    busy_error,
    claim_unit,
    resume_session,
    serve_session,
)
from speech_to_speech.realtime.transport import WebSocketTransport
from speech_to_speech.realtime.webrtc import add_webrtc_routes

log = logging.getLogger(__name__)

MODEL_ID = "speech-to-speech"
ABNORMAL_CLOSURE = 1006


async def _websocket_messages(websocket: WebSocket, transport: WebSocketTransport) -> AsyncIterator[str | bytes]:
    """The client's frames; the close code it went with is left on ``transport`` (a goodbye or a drop)."""
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                code = message.get("code")
                # uvicorn reports a connection lost without a close frame as 1005 with no reason (a close
                # frame without a code comes with one): call it what RFC 6455 does, 1006, a drop.
                transport.peer_close_code = ABNORMAL_CLOSURE if code == 1005 and "reason" not in message else code
                return
            payload = message.get("text")
            if payload is None:
                payload = message.get("bytes")
            if payload is not None:
                yield payload
    except WebSocketDisconnect as disconnect:
        transport.peer_close_code = disconnect.code
        return


def client_address(scope: Any) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def create_app(pool: PipelinePool, settings: ServerSettings, languages: LanguageService) -> FastAPI:
    app = FastAPI(title="speech-to-speech", version=__version__)
    app.state.pool = pool
    app.state.settings = settings
    app.state.languages = languages
    app.state.metrics = metrics = ServerMetrics(pool)
    app.state.sessions = sessions = LiveSessions()
    # Resumable sessions by id: a socket opened with ?autostart=0 takes one over (docs/sessions.md).
    app.state.registry = registry = SessionRegistry[LiveSession]()
    app.state.admission = admission = ClientAdmission(settings.max_sessions_per_client,
                                                      settings.max_sessions_per_minute)
    app.add_middleware(AccessPolicy, api_key=settings.api_key, allowed_origins=settings.allowed_origins,
                       loopback_bind=is_loopback(settings.host))

    @app.get("/health")
    def health() -> JSONResponse:
        slots = pool.status()
        healthy = any(slot.healthy for slot in slots)
        return JSONResponse({"status": "ok" if healthy else "degraded"}, status_code=200 if healthy else 503)

    @app.get("/v1/pool")
    def pool_status() -> dict[str, Any]:
        slots = pool.status()
        return {
            "size": len(slots),
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
                "pipeline": {"vad": settings.vad, "stt": settings.stt_model or settings.stt,
                             "llm": settings.llm_model or settings.llm, "tts": settings.tts_model or settings.tts},
            }],
        }

    @app.get("/v1/realtime/capabilities")
    def capabilities() -> dict[str, Any]:
        # What session.created will say, per transport, for a client to read before it connects.
        turns = any(unit.detects_turns for unit in pool.units())
        sessions = {name: session_capabilities(resumable=name == "websocket", media_track=name == "webrtc",
                                               multi_session=pool.size > 1, turn_detector=turns)
                    for name in ("websocket", "webrtc")}
        return {**languages.capabilities(pool.size), "sessions": sessions}

    # WebRTC: POST /v1/realtime/calls (aiortc is imported at the first call).
    add_webrtc_routes(app, pool, settings, languages, metrics)

    @app.websocket("/v1/realtime")
    async def realtime(websocket: WebSocket) -> None:
        # Refused at the handshake (HTTP 429/503), not accepted and closed: clients such as
        # LiveKit's plugin would reconnect at once to a socket that opens.
        address = client_address(websocket.scope)
        refusal = admission.admit(address)
        if refusal is not None:
            await deny(websocket.scope, websocket.send, 429, errors.error_event(
                errors.TOO_MANY_SESSIONS, refusal, type="rate_limit_error"), [("retry-after", "60")])
            return
        offered = websocket.scope.get("subprotocols") or []
        subprotocol = "realtime" if "realtime" in offered else None
        transport = WebSocketTransport(websocket)
        try:
            if websocket.query_params.get("autostart", "1").lower() in ("0", "false", "off"):
                await websocket.accept(subprotocol=subprotocol)  # resume-only: no unit, no session.created
                await resume_session(transport, _websocket_messages(websocket, transport), registry, settings,
                                     metrics=metrics)
                return
            unit = await claim_unit(pool, settings, evict=lambda: evict_oldest(registry))
            if unit is None:
                await deny(websocket.scope, websocket.send, 503, busy_error(pool), [("retry-after", "1")])
                return
            try:
                await websocket.accept(subprotocol=subprotocol)
            except BaseException:
                pool.release(unit)
                raise
            await serve_session(
                transport,
                _websocket_messages(websocket, transport),
                pool,
                settings,
                validate_language=languages.validate_session_language,
                metrics=metrics,
                unit=unit,
                sessions=sessions,
                registry=registry,
            )
        finally:
            admission.leave(address)

    app.state.demo = settings.demo and mount_demo(app)
    return app
