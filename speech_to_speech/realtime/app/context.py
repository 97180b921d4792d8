"""What every route and the server loop share, built once per app and handed to each explicitly.

One :class:`ServerContext` per app (``create_app``), kept on ``app.state.context``
for the server loop (app/serving.py) and for code that embeds the app; the
routes get it as an argument. ``app.state.gate`` and ``app.state.readiness``
name two of its parts for embedding code (a readiness check of its own,
docs/deployment.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.app.readiness import Readiness, admission_check, free_unit_check, reachability_check
from speech_to_speech.realtime.metrics import ServerMetrics
from speech_to_speech.realtime.sessions.gate import SessionGate
from speech_to_speech.realtime.sessions.live import LiveSession
from speech_to_speech.realtime.sessions.registry import SessionRegistry
from speech_to_speech.realtime.sessions.runner import LiveSessions
from speech_to_speech.realtime.sessions.store import SessionStore, open_store
from speech_to_speech.realtime.wire.languages import LanguageService
from speech_to_speech.units.pool import PipelinePool


@dataclass(frozen=True)
class ServerContext:
    pool: PipelinePool
    settings: ServerSettings
    languages: LanguageService
    metrics: ServerMetrics
    sessions: LiveSessions  # every live session, for a shutdown to end (detached ones too)
    # Resumable sessions by id: a socket opened with ?autostart=0 takes one over (docs/sessions.md).
    registry: SessionRegistry[LiveSession]
    gate: SessionGate  # who gets a place and a unit, for WebSocket and WebRTC alike
    # Where other replicas find these sessions (--session_store; memory: nowhere), realtime/sessions/store/.
    store: SessionStore
    readiness: Readiness  # what GET /ready asks; register(check) adds a check
    demo: bool  # the browser demo is served at /demo

    @property
    def shared_store(self) -> SessionStore | None:
        """The store when other replicas share it, else None (a session then lives in this process only)."""
        return self.store if self.store.shared else None


def build_context(pool: PipelinePool, settings: ServerSettings, languages: LanguageService, *,
                  demo: bool) -> ServerContext:
    metrics = ServerMetrics(pool)
    registry = SessionRegistry[LiveSession]()
    gate = SessionGate(pool, settings, evict=registry.evict_oldest)
    store = open_store(settings, on_write=metrics.store_wrote)
    readiness = Readiness([admission_check(gate),
                           free_unit_check(pool, lambda: registry.oldest_detached() is not None)])
    if store.shared:  # a replica cut off from the shared sessions would take ones it cannot hand on
        readiness.register(reachability_check("session store", store.reachable))
    return ServerContext(pool, settings, languages, metrics, LiveSessions(), registry, gate, store, readiness, demo)


def server_context(app: Any) -> ServerContext | None:
    """The context of our app; None for any other ASGI app served here (tests)."""
    context = getattr(getattr(app, "state", None), "context", None)
    return context if isinstance(context, ServerContext) else None
