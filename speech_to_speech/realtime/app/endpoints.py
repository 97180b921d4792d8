"""The HTTP endpoints beside ``/v1/realtime``: health, readiness, the pool, metrics, models, capabilities."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

from speech_to_speech.realtime.app.context import ServerContext
from speech_to_speech.realtime.metrics import CONTENT_TYPE
from speech_to_speech.realtime.service.capabilities import session_capabilities

MODEL_ID = "speech-to-speech"


def add_http_routes(app: FastAPI, context: ServerContext) -> None:
    pool, settings = context.pool, context.settings

    @app.get("/health")
    def health() -> JSONResponse:
        slots = pool.status()
        healthy = any(slot.healthy for slot in slots)
        return JSONResponse({"status": "ok" if healthy else "degraded"}, status_code=200 if healthy else 503)

    @app.get("/ready")
    async def ready() -> JSONResponse:
        reasons = await context.readiness.reasons()
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
        return Response(context.metrics.render(), media_type=CONTENT_TYPE)

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
        return realtime_capabilities(context)


def realtime_capabilities(context: ServerContext) -> dict[str, Any]:
    """What session.created will say, per transport, for a client to read before it connects."""
    pool = context.pool
    turns = any(unit.detects_turns for unit in pool.units())
    sessions = {name: session_capabilities(resumable=name == "websocket", media_track=name == "webrtc",
                                           multi_session=pool.size > 1, turn_detector=turns)
                for name in ("websocket", "webrtc")}
    voices = next((unit.voices for unit in pool.units()), None)
    if voices is not None:  # session.created lists them too (RealtimeService.start)
        sessions = {name: {**offered, "voices": list(voices)} for name, offered in sessions.items()}
    return {**context.languages.capabilities(pool.size, voices), "sessions": sessions}
