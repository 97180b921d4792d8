"""``speech-to-speech serve``: load the models, build the pool, serve the app."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from speech_to_speech.config import ServerSettings
from speech_to_speech.memory import release_free_memory, tune_allocator
from speech_to_speech.realtime.app.context import server_context
from speech_to_speech.realtime.app.router import create_app
from speech_to_speech.realtime.app.serving import RealtimeServer
from speech_to_speech.realtime.webrtc.signalling import ice_servers_from_env
from speech_to_speech.realtime.wire.languages import LanguageService
from speech_to_speech.units.builder import PipelineFactory
from speech_to_speech.units.pool import PipelinePool

log = logging.getLogger("speech_to_speech")


def build_app(settings: ServerSettings) -> tuple[FastAPI, PipelinePool]:
    """Load every model once, build ``num_pipelines`` units (``auto``: sized for the machine), and the app."""
    ice_servers_from_env()  # a bad SPEECH_TO_SPEECH_ICE_SERVERS stops startup before any model loads
    factory = PipelineFactory(settings)
    settings = factory.settings  # with "auto" made a number
    pool = PipelinePool(factory.size.units, factory.build_unit, settings.server.release_timeout_s,
                        on_close=factory.close, sizing=factory.size.reason)
    first = pool.units()[0]
    try:
        languages = LanguageService.from_handlers(
            settings,
            first.stages.stt.language_capabilities,
            first.stages.tts.language_capabilities,
        )
    except ValueError:
        pool.close()  # a deployment declaration contradicts the models: stop the units again
        raise
    return create_app(pool, settings, languages), pool


def run(settings: ServerSettings) -> None:
    logging.basicConfig(level=settings.server.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    tune_allocator()
    app, pool = build_app(settings)
    release_free_memory()  # what loading and converting the models freed
    log.info("ready: ws://%s:%d/v1/realtime (%d pipeline(s): %s)", settings.server.host, settings.server.port,
             pool.size, pool.sizing)
    context = server_context(app)
    if context is not None and context.demo:
        # Browsers give the microphone to https pages and to localhost only: name the local address.
        host = "127.0.0.1" if settings.server.host in ("0.0.0.0", "::", "") else settings.server.host
        log.info("demo:  http://%s:%d/demo", host, settings.server.port)
    try:
        RealtimeServer(app, host=settings.server.host, port=settings.server.port,
                       log_level=settings.server.log_level.lower(), max_event_bytes=settings.limits.max_event_bytes,
                       drain_s=settings.server.shutdown_drain_s).run()
    finally:
        pool.close()
    log.info("stopped")
