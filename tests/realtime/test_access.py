"""Access control over the wire: the API key, browser Origins, per-address limits, no open bind without a key."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
import websockets

from speech_to_speech.cli import main
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ServerFactory

KEY = "sk-test-very-secret-4242"


async def _session_created(server: RunningServer, **connect: Any) -> dict[str, Any]:
    async with RealtimeTestClient.connect(server.ws_url, **connect) as client:
        return await client.wait_for("session.created")


async def _refused(server: RunningServer, **connect: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(websockets.InvalidStatus) as refused:
        await _session_created(server, **connect)
    response = refused.value.response
    return response.status_code, json.loads(response.body)


@pytest.fixture
def keyed(make_server: ServerFactory) -> RunningServer:
    return make_server(api_key=KEY)


async def test_a_websocket_without_the_key_is_refused_at_the_handshake(keyed: RunningServer) -> None:
    status, body = await _refused(keyed)
    assert status == 401
    assert body["error"]["code"] == "invalid_api_key"
    status, _ = await _refused(keyed, additional_headers={"Authorization": "Bearer wrong"})
    assert status == 401
    status, _ = await _refused(keyed, subprotocols=["realtime", "openai-insecure-api-key.wrong"])
    assert status == 401


async def test_the_key_opens_a_websocket_as_header_or_browser_subprotocol(keyed: RunningServer) -> None:
    await _session_created(keyed, additional_headers={"Authorization": f"Bearer {KEY}"})
    await _session_created(keyed, subprotocols=["realtime", f"openai-insecure-api-key.{KEY}"])


async def test_http_routes_need_the_key_except_health(keyed: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=keyed.http_url, timeout=5) as http:
        assert (await http.get("/health")).status_code == 200
        for path in ("/v1/models", "/v1/pool", "/metrics", "/v1/realtime/capabilities"):
            refused = await http.get(path)
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"] == "Bearer"
            assert (await http.get(path, headers={"Authorization": f"Bearer {KEY}"})).status_code == 200, path


async def test_a_webrtc_offer_without_the_key_is_refused(keyed: RunningServer) -> None:
    async with httpx.AsyncClient(base_url=keyed.http_url, timeout=5) as http:
        refused = await http.post("/v1/realtime/calls", content="v=0\r\n",
                                  headers={"Content-Type": "application/sdp"})
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "invalid_api_key"
        # With the key the offer reaches the WebRTC route (and this one is not valid SDP).
        reached = await http.post("/v1/realtime/calls", content="v=0\r\n",
                                  headers={"Content-Type": "application/sdp", "Authorization": f"Bearer {KEY}"})
        assert reached.status_code in (400, 501)


async def test_the_key_is_never_logged(make_server: ServerFactory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server = make_server(api_key=KEY, log_level="debug")
    assert KEY not in repr(server.pool) and KEY not in caplog.text
    await _session_created(server, subprotocols=["realtime", f"openai-insecure-api-key.{KEY}"])
    await _refused(server, additional_headers={"Authorization": f"Bearer {KEY}x"})
    # The test's own client logs what it sends; everything else here is the server's.
    server_logs = [r.getMessage() for r in caplog.records if not r.name.startswith("websockets.client")]
    assert server_logs and not [line for line in server_logs if KEY in line]


async def test_web_pages_of_other_origins_are_refused(make_server: ServerFactory) -> None:
    server = make_server()
    status, body = await _refused(server, origin="https://evil.example")
    assert status == 403
    assert body["error"]["code"] == "origin_not_allowed"
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
        assert (await http.get("/v1/models", headers={"Origin": "https://evil.example"})).status_code == 403
        webrtc = await http.post("/v1/realtime/calls", content="v=0\r\n",
                                 headers={"Content-Type": "application/sdp", "Origin": "https://evil.example"})
        assert webrtc.status_code == 403
        assert (await http.get("/v1/models", headers={"Origin": "null"})).status_code == 403
    # A loopback server serves pages of this machine, and always its own (the demo).
    await _session_created(server, origin="http://localhost:5173")
    await _session_created(server, origin=f"http://{server.host}:{server.port}")
    await _session_created(server)  # no Origin: not a browser


async def test_an_origin_list_replaces_the_loopback_default(make_server: ServerFactory) -> None:
    server = make_server(allowed_origins=["https://app.example"])
    await _session_created(server, origin="https://app.example")
    assert (await _refused(server, origin="http://localhost:5173"))[0] == 403
    await _session_created(server, origin=f"http://{server.host}:{server.port}")  # still its own


async def test_concurrent_sessions_per_address_are_limited(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=2, max_sessions_per_client=1)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        status, body = await _refused(server)
        assert status == 429
        assert body["error"]["code"] == "too_many_sessions"
    await _session_created(server)  # the first one left: room again


async def test_a_webrtc_call_counts_against_the_same_address_limit(make_server: ServerFactory) -> None:
    pytest.importorskip("aiortc")  # without the webrtc extra a call is 501 before any limit
    server = make_server(num_pipelines=2, max_sessions_per_client=1)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
            refused = await http.post("/v1/realtime/calls", content="v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n",
                                      headers={"Content-Type": "application/sdp"})
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "too_many_sessions"


async def test_sessions_per_minute_per_address_are_limited(make_server: ServerFactory) -> None:
    server = make_server(max_sessions_per_minute=2)
    await _session_created(server)
    await _session_created(server)
    assert (await _refused(server))[0] == 429


def test_serve_refuses_an_open_network_bind_without_a_key(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPEECH_TO_SPEECH_API_KEY", raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    error = capsys.readouterr().err
    assert "--api_key" in error and "--allow_unauthenticated" in error


def test_secrets_stay_out_of_reprs_and_benchmark_files(make_server: ServerFactory) -> None:
    from speech_to_speech.bench.results import environment
    from speech_to_speech.bench.target import Target
    from speech_to_speech.config import ServerSettings

    secrets = {"api_key": KEY, "llm_api_key": KEY + "-llm", "stt_api_key": KEY + "-stt", "tts_api_key": KEY + "-tts"}
    server = make_server()  # the bench's own server (its clients send no key); the settings it reports:
    settings = ServerSettings(**secrets)
    assert KEY not in repr(settings) and KEY not in str(settings)
    target = Target(server.ws_url, server.http_url, settings, "in-process")
    target_env = environment(target)
    assert KEY not in json.dumps(target_env)
