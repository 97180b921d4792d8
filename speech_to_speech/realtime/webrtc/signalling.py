"""WebRTC signalling: ``POST /v1/realtime/calls`` turns an SDP offer into a call; ``DELETE`` ends it.

This is OpenAI's GA handshake. The offer comes as ``application/sdp``, or as
the ``sdp`` field of a ``multipart/form-data`` body whose ``session`` field
configures the session before ``session.created``. The answer is ``201`` with
the SDP answer and ``Location: /v1/realtime/calls/{call_id}``. The call is a
Realtime session like a WebSocket one (see ``webrtc_call``).

A pipeline unit is claimed at the session gate (``session_gate``, shared with
the WebSocket) before the answer goes out, so a full pool is an HTTP error,
not a call that connects and dies: ``503`` with ``Retry-After``, the HTTP form
of WebSocket's close code 1013 (try again later), after the gate's wait
(``--admission_wait_s``). It is not 429: the client did nothing wrong, the
server is out of capacity for the moment. Every error is JSON:
``{"error": {"type", "code", "message", "param"}}``; a refusal at the gate adds
``retry_after_s``.

aiortc (the ``webrtc`` extra) is imported at the first call, not with the
server: without it the rest of the server works and a call gets ``501`` with
the command that installs it.

ICE servers come from ``SPEECH_TO_SPEECH_ICE_SERVERS`` (a JSON list of
``{"urls", "username"?, "credential"?}``), read when the app is built so a
bad value stops the server at startup. Without it no STUN or TURN server is
contacted: aiortc would ask a public STUN server when given none, so it is
given an empty list.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from types import ModuleType
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import UploadFile

from speech_to_speech import ids
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import error_codes, error_types
from speech_to_speech.realtime.connection.transport import Transport
from speech_to_speech.realtime.metrics import ServerMetrics
from speech_to_speech.realtime.service.realtime_service import RealtimeService
from speech_to_speech.realtime.sessions.gate import Refusal, SessionGate
from speech_to_speech.realtime.sessions.runner import LiveSessions, serve_session
from speech_to_speech.realtime.wire.errors import RealtimeError
from speech_to_speech.realtime.wire.languages import LanguageService
from speech_to_speech.realtime.wire.session import SessionState
from speech_to_speech.realtime.wire.voices import VoiceCatalog
from speech_to_speech.units.pool import PipelinePool

log = logging.getLogger(__name__)

ICE_SERVERS_ENV = "SPEECH_TO_SPEECH_ICE_SERVERS"
INSTALL_HINT = "pip install 'speech-to-speech[webrtc]'"
CALLS_PATH = "/v1/realtime/calls"
MAX_OFFER_BYTES = 64 * 1024
# A call that has not connected (events channel open) by then is ended and its unit freed.
CONNECT_TIMEOUT_S = 30.0
HANGUP_TIMEOUT_S = 10.0


def error_response(status: int, code: str, message: str, *, type: str = error_types.INVALID_REQUEST_ERROR,
                   param: str | None = None, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": type, "code": code, "message": message, "param": param}},
                        status_code=status, headers=dict(headers or {}))


class OfferRejected(Exception):
    def __init__(self, response: JSONResponse) -> None:
        super().__init__(response.body)
        self.response = response


# ---------------------------------------------------------------- configuration


def ice_servers_from_env(environ: Mapping[str, str] = os.environ) -> list[dict[str, Any]]:
    """The ICE servers of ``SPEECH_TO_SPEECH_ICE_SERVERS``; none when unset. Raises ValueError, saying why."""
    raw = environ.get(ICE_SERVERS_ENV, "").strip()
    if not raw:
        return []
    example = '[{"urls": "stun:stun.example.com:3478"}, {"urls": "turn:turn.example.com", "username": "u", ' \
              '"credential": "c"}]'
    try:
        servers = json.loads(raw)
    except ValueError as error:
        raise ValueError(f"{ICE_SERVERS_ENV} is not valid JSON ({error}); expected a list like {example}") from None
    if not isinstance(servers, list):
        raise ValueError(f"{ICE_SERVERS_ENV} must be a JSON list of ICE servers, like {example}")
    for index, server in enumerate(servers):
        where = f"{ICE_SERVERS_ENV}[{index}]"
        if not isinstance(server, dict):
            raise ValueError(f"{where} must be an object with 'urls'")
        urls = server.get("urls")
        if not (isinstance(urls, str) and urls) and not (
            isinstance(urls, list) and urls and all(isinstance(u, str) and u for u in urls)
        ):
            raise ValueError(f"{where}.urls must be a URL or a non-empty list of URLs")
        unknown = set(server) - {"urls", "username", "credential"}
        if unknown:
            raise ValueError(f"{where} has unknown keys {sorted(unknown)} (allowed: urls, username, credential)")
        for key in ("username", "credential"):
            if key in server and not isinstance(server[key], str):
                raise ValueError(f"{where}.{key} must be a string")
    return servers


def _load_call_module() -> ModuleType | None:
    """``webrtc_call`` if aiortc can be imported, else None (the extra is not installed)."""
    try:
        importlib.import_module("aiortc")
        return importlib.import_module("speech_to_speech.realtime.webrtc.call")
    except ImportError as error:
        log.warning("WebRTC call refused: %s (%s)", error, INSTALL_HINT)
        return None


# ---------------------------------------------------------------- the offer


async def _field_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, UploadFile):
        return (await value.read()).decode("utf-8", errors="replace")
    return None


async def read_offer(request: Request) -> tuple[str, dict[str, Any] | None]:
    """The SDP offer and the initial session (multipart only); raises OfferRejected."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    session: dict[str, Any] | None = None
    if kind == "application/sdp":
        body = await request.body()
        if len(body) > MAX_OFFER_BYTES:
            raise OfferRejected(error_response(413, error_codes.INVALID_SDP,
                                               f"An SDP offer is at most {MAX_OFFER_BYTES} bytes"))
        sdp: str | None = body.decode("utf-8", errors="replace")
    elif kind == "multipart/form-data":
        async with request.form(max_files=2, max_fields=8, max_part_size=MAX_OFFER_BYTES) as form:
            sdp = await _field_text(form.get("sdp"))
            session_text = await _field_text(form.get("session"))
        if session_text is not None:
            try:
                session = json.loads(session_text)
            except ValueError:
                session = None
            if not isinstance(session, dict):
                raise OfferRejected(error_response(400, error_codes.INVALID_REQUEST,
                                                   "The 'session' field must be a JSON object", param="session"))
    else:
        raise OfferRejected(error_response(
            415, error_codes.INVALID_REQUEST,
            "Send the SDP offer as Content-Type: application/sdp, or as the 'sdp' field of multipart/form-data",
        ))
    if not sdp or not sdp.lstrip().startswith("v=0") or "\nm=" not in sdp:
        raise OfferRejected(error_response(400, error_codes.INVALID_SDP,
                                           "The body is not an SDP offer (v=0 and at least one m= section)",
                                           param="sdp"))
    return sdp, session


def check_session(session: dict[str, Any], settings: ServerSettings, languages: LanguageService,
                  voices: VoiceCatalog | None = None) -> None:
    """Validate a call's initial session as its ``session.update`` would be; raises RealtimeError."""
    SessionState.for_server(settings, voices=voices).apply_update(
        session, None, check_language=languages.validate_session_language)


# ---------------------------------------------------------------- routes


def add_webrtc_routes(app: FastAPI, pool: PipelinePool, settings: ServerSettings, languages: LanguageService,
                      metrics: ServerMetrics | None = None, *, gate: SessionGate, sessions: LiveSessions) -> None:
    """``POST /v1/realtime/calls`` and ``DELETE /v1/realtime/calls/{call_id}`` on ``app``."""
    ice_servers = ice_servers_from_env()
    calls: dict[str, Any] = {}  # call id -> WebRTCCall, while its session runs

    @app.post(CALLS_PATH)
    async def create_call(request: Request) -> Response:
        call_module = _load_call_module()
        if call_module is None:
            return error_response(501, error_codes.WEBRTC_UNAVAILABLE,
                                  f"WebRTC needs the webrtc extra, which is not installed: {INSTALL_HINT}",
                                  type=error_types.SERVER_ERROR)
        try:
            offer, session = await read_offer(request)
            if session is not None:
                check_session(session, settings, languages, VoiceCatalog(pool.units()[0].voices))
        except OfferRejected as rejected:
            return rejected.response
        except RealtimeError as error:
            return error_response(400, error.code, error.message, param=error.param)

        address = request.client.host if request.client else "unknown"
        # A detached WebSocket session gives its unit up to a new call.
        async with gate.session(address) as entry:
            if isinstance(entry, Refusal):
                return JSONResponse({"error": entry.error}, status_code=entry.status, headers=entry.headers)
            call = call_module.WebRTCCall(ids.new_id("rtc"), ice_servers, CONNECT_TIMEOUT_S)
            call.initial_session = session
            try:
                answer = await call.answer(offer)
            except Exception as error:  # noqa: BLE001 - aiortc refuses offers with ValueError and errors of its own
                await call.close()
                return error_response(400, error_codes.INVALID_SDP, f"The SDP offer cannot be answered: {error}",
                                      param="sdp")
            held = entry.move()  # the call's task holds the place and the unit from here on

        async def run(transport: Transport, incoming: AsyncIterator[str | bytes],
                      attach: Callable[[RealtimeService], None]) -> None:
            with held:
                await serve_session(transport, incoming, held.lease, settings, on_service=attach, metrics=metrics,
                                    validate_language=languages.validate_session_language, sessions=sessions)

        calls[call.id] = call
        call.start(run, on_closed=lambda ended: calls.pop(ended.id, None))
        assert call.task is not None
        call.task.add_done_callback(lambda _: held.close())  # a task cancelled before it ran never enters run
        log.info("call %s on unit %d", call.id, held.lease.unit.index)
        return Response(answer, status_code=201, media_type="application/sdp",
                        headers={"Location": f"{CALLS_PATH}/{call.id}"})

    @app.delete(CALLS_PATH + "/{call_id}")
    async def end_call(call_id: str) -> Response:
        call = calls.get(call_id)
        if call is None:
            return error_response(404, error_codes.CALL_NOT_FOUND, f"No active call {call_id!r}", param="call_id")
        await call.hangup(HANGUP_TIMEOUT_S)
        return Response(status_code=204)

    async def end_all_calls() -> None:
        for call in list(calls.values()):
            await call.hangup(HANGUP_TIMEOUT_S)

    app.router.add_event_handler("shutdown", end_all_calls)
