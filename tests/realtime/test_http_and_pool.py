"""HTTP endpoints beside the WebSocket, the session limit, and that no pipeline unit leaks."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
import websockets

from speech_to_speech.pool_size import pool_size
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import SCRIPTED_VOICES
from speech_to_speech.testing.server import RunningServer

from .conftest import ServerFactory

RATE = 24000


async def _get(server: RunningServer, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
        return await http.get(path)


async def _pool(server: RunningServer) -> dict[str, Any]:
    response = await _get(server, "/v1/pool")
    assert response.status_code == 200
    return dict(response.json())


async def _wait_all_idle(server: RunningServer, timeout: float = 10.0) -> dict[str, Any]:
    """Poll /v1/pool until every unit is idle and healthy (released units drain in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        pool = await _pool(server)
        if all(p["state"] == "idle" and p["healthy"] for p in pool["pipelines"]):
            return pool
        if time.monotonic() > deadline:
            raise AssertionError(f"units not idle after {timeout}s: {pool}")
        await asyncio.sleep(0.05)


async def test_health_and_models(server: RunningServer) -> None:
    health = await _get(server, "/health")
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    models = (await _get(server, "/v1/models")).json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["speech-to-speech"]
    assert models["data"][0]["pipeline"]["llm"] == "scripted"


async def test_pool_states_follow_sessions(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=2)
    pool = await _pool(server)
    assert pool["size"] == 2 and pool["available"] == 2
    assert [p["index"] for p in pool["pipelines"]] == [0, 1]
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        busy = await _pool(server)
        assert sorted(p["state"] for p in busy["pipelines"]) == ["busy", "idle"]
        assert busy["available"] == 1
    idle = await _wait_all_idle(server)
    assert idle["available"] == 2


async def test_the_pool_says_how_its_size_was_chosen(make_server: ServerFactory) -> None:
    pool = await _pool(make_server(num_pipelines=2))
    assert pool["size"] == 2 and "as --num_pipelines says" in pool["sizing"]
    auto = await _pool(make_server(num_pipelines="auto"))
    assert auto["sizing"].startswith(f"auto: {auto['size']} unit(s)")
    assert auto["size"] == pool_size("auto").units == len(auto["pipelines"])


def _check_stage(stage: dict[str, Any], *extra: str) -> None:
    assert set(stage) == {"languages", "supports_language_selection", "supports_auto", *extra}
    assert isinstance(stage["supports_language_selection"], bool)
    assert stage["supports_auto"] in (True, False, None)


async def test_capabilities_shape_and_availability_while_busy(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1, stt_supported_languages=["en", "French", "xx"],
                         tts_supported_languages=["en", "fr"], stt_auto_language_supported=True)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        assert (await _pool(server))["available"] == 0
        response = await _get(server, "/v1/realtime/capabilities")  # every unit is busy
    assert response.status_code == 200
    (pipeline,) = response.json()["pipelines"]
    assert pipeline["index"] == 0
    _check_stage(pipeline["stt"])
    _check_stage(pipeline["tts"], "voices")
    assert pipeline["tts"]["voices"] == list(SCRIPTED_VOICES) == created["session"]["capabilities"]["voices"]
    assert pipeline["stt"]["languages"] == [{"code": "en", "name": "english"}, {"code": "fr", "name": "french"},
                                            {"code": "xx", "name": None}]
    assert pipeline["stt"]["supports_auto"] is True
    assert pipeline["tts"]["supports_auto"] is None
    conversation = pipeline["conversation"]
    assert set(conversation) == {"languages", "selectable_languages", "session_auto_supported"}
    assert conversation["languages"] == [{"code": "en", "name": "english"}, {"code": "fr", "name": "french"}]
    # Scripted handlers have no language control: nothing named is selectable.
    assert conversation["selectable_languages"] == []
    assert conversation["session_auto_supported"] is True


async def test_capabilities_unknown_coverage(server: RunningServer) -> None:
    pipelines = (await _get(server, "/v1/realtime/capabilities")).json()["pipelines"]
    assert [p["index"] for p in pipelines] == [0, 1]
    pipeline = pipelines[0]
    assert pipeline["stt"]["languages"] is None
    assert pipeline["conversation"]["languages"] is None
    assert pipeline["conversation"]["selectable_languages"] is None


async def test_session_limit(make_server: ServerFactory) -> None:
    """A full pool refuses at the handshake (HTTP 503), so no client sees a socket open and close."""
    server = make_server(num_pipelines=1)
    async with RealtimeTestClient.connect(server.ws_url) as first:
        await first.wait_for("session.created")
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with RealtimeTestClient.connect(server.ws_url):
                pass
        response = refused.value.response
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "1"
        assert json.loads(response.body)["error"]["code"] == "session_limit_reached"
        # The first session is untouched.
        await first.send("response.create")
        assert (await first.response_cycle())[-1]["response"]["status"] == "completed"
    await _wait_all_idle(server)
    async with RealtimeTestClient.connect(server.ws_url) as third:
        assert (await third.recv())["type"] == "session.created"
        await third.append_audio(spoken_turn(RATE), RATE)
        assert (await third.wait_for("response.done"))["response"]["status"] == "completed"


async def test_no_unit_leaks_after_many_sessions_and_abrupt_disconnects(make_server: ServerFactory) -> None:
    # A vanished client's session waits out a (short) disconnect grace for a resume, then gives its unit back.
    server = make_server(num_pipelines=2, scripted_token_delay_ms=5, disconnect_grace_s=0.3, scripted_replies=[
        "A reply that takes a little while to say, so that a client can vanish in the middle of it."])
    for round_ in range(12):
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.append_audio(spoken_turn(RATE), RATE)
            if round_ % 3 == 0:
                await client.wait_for("response.done")  # a whole turn, then a clean close
            elif round_ % 3 == 1:
                await client.wait_for("response.output_audio.delta")
                client.abort()  # vanish mid-response
            else:
                await client.wait_for("input_audio_buffer.speech_stopped")
                client.abort()  # vanish while the turn is being transcribed
        await _wait_all_idle(server)
    pool = await _wait_all_idle(server)
    assert pool["available"] == 2
    assert all(p["rebuilds"] == 0 for p in pool["pipelines"]), pool  # drained, never quarantined
    # A unit that served an abandoned response starts clean: a full turn works on each.
    async with RealtimeTestClient.connect(server.ws_url) as a, RealtimeTestClient.connect(server.ws_url) as b:
        for client in (a, b):
            await client.wait_for("session.created")
            await client.append_audio(spoken_turn(RATE), RATE)
        for client in (a, b):
            events = await client.collect_until("response.done")
            assert events[-1]["response"]["status"] == "completed"
            assert events[0]["type"] == "input_audio_buffer.speech_started"


async def test_concurrent_sessions_do_not_mix(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=3, scripted_token_delay_ms=2)

    async def turn() -> list[str]:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.append_audio(spoken_turn(RATE), RATE, pace=8.0)
            events = await client.collect_until("response.done")
            return [str(e.get("response_id") or "") for e in events if e["type"].startswith("response.output")]

    results = await asyncio.wait_for(asyncio.gather(*(turn() for _ in range(3))), 20)
    owners = [set(ids) for ids in results]
    assert all(len(ids) == 1 for ids in owners)
    assert len(set.union(*owners)) == 3  # three responses, each on its own connection
    await _wait_all_idle(server)
