"""``GET /ready``: 200 while a new session would be served, 503 with the reasons while it would not."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from speech_to_speech.config import ServerSettings
from speech_to_speech.realtime.app.readiness import Readiness, reachability_check
from speech_to_speech.realtime.app.server import build_app
from speech_to_speech.realtime.app.serving import RealtimeServer
from speech_to_speech.realtime.sessions.gate import Refusal
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import free_port, serving

from .conftest import SCRIPTED, ServerFactory


async def _ready(base_url: str, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base_url, timeout=5) as http:
        return await http.get("/ready", headers=headers)


async def _until_status(base_url: str, status: int, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        response = await _ready(base_url)
        if response.status_code == status:
            return dict(response.json())
        assert time.monotonic() < deadline, f"/ready still {response.status_code}: {response.json()}"
        await asyncio.sleep(0.05)


@pytest.fixture
def app() -> Iterator[FastAPI]:
    """The real app with scripted stages, not served: its gate and readiness driven directly."""
    app, pool = build_app(ServerSettings(**SCRIPTED))
    try:
        yield app
    finally:
        pool.close()


async def test_ready_until_the_only_unit_is_taken_and_again_once_it_is_free(make_server: ServerFactory) -> None:
    server = make_server(num_pipelines=1)
    first = await _ready(server.http_url)
    assert (first.status_code, first.json()) == (200, {"status": "ready"})
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        full = await _ready(server.http_url)
        assert full.status_code == 503
        assert full.json() == {"status": "unavailable", "reasons": ["no free pipeline unit: none of 1 is idle"]}
    await _until_status(server.http_url, 200)


async def test_a_unit_held_by_a_session_whose_socket_dropped_counts_as_free(make_server: ServerFactory) -> None:
    """The gate ends a detached session for a new one when the pool is full, so the replica is still ready."""
    server = make_server(num_pipelines=1, disconnect_grace_s=30)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        assert (await _ready(server.http_url)).status_code == 503
        client.abort()
        await _until_status(server.http_url, 200)
        assert [slot.state for slot in server.pool.status()] == ["busy"]  # still the detached session's


async def test_a_registered_check_that_fails_makes_the_replica_unavailable_and_says_why(app: FastAPI) -> None:
    store_up = True

    async def reachable() -> bool:  # what the session store offers
        return store_up

    app.state.readiness.register(reachability_check("session store", reachable))
    port = free_port()
    with serving(app, port):
        base_url = f"http://127.0.0.1:{port}"
        assert (await _ready(base_url)).status_code == 200
        store_up = False
        down = await _ready(base_url)
        assert down.status_code == 503
        assert down.json()["reasons"] == ["session store unreachable"]


async def test_ready_needs_no_api_key_like_health(make_server: ServerFactory) -> None:
    server = make_server(api_key="secret")
    assert (await _ready(server.http_url)).status_code == 200
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
        assert (await http.get("/v1/pool")).status_code == 401


async def test_a_check_that_raises_or_hangs_is_a_reason_and_the_others_still_answer() -> None:
    async def fine() -> str | None:
        return None

    async def broken() -> str | None:
        raise ConnectionRefusedError("redis:6379")

    async def hung() -> str | None:
        await asyncio.sleep(60)
        return None

    async def refused() -> bool:
        raise ConnectionRefusedError("redis:6379")

    readiness = Readiness([fine, broken, hung, reachability_check("session store", refused)], timeout_s=0.1)
    started = time.monotonic()
    reasons = await readiness.reasons()
    assert reasons == ["broken: ConnectionRefusedError('redis:6379')", "hung: no answer within 0.1 s",
                       "session store unreachable: ConnectionRefusedError('redis:6379')"]
    assert time.monotonic() - started < 1.0  # the checks run side by side, each bounded


async def test_sigterm_stops_admitting_before_the_server_loop_notices(app: FastAPI) -> None:
    """The signal handler itself closes the gate: /ready is 503 and a new session refused at once."""
    server = RealtimeServer(app, host="127.0.0.1", port=free_port(), log_level="warning", max_event_bytes=1 << 20)
    server.handle_exit(signal.SIGTERM, None)
    assert server.restarting and server.should_exit
    assert await app.state.readiness.reasons() == ["the server is restarting"]
    refused = await app.state.gate.enter("127.0.0.1")
    assert isinstance(refused, Refusal)
    assert (refused.status, refused.code) == (503, "server_shutting_down")


async def test_sigint_is_a_shutdown_not_a_restart(app: FastAPI) -> None:
    server = RealtimeServer(app, host="127.0.0.1", port=free_port(), log_level="warning", max_event_bytes=1 << 20)
    server.handle_exit(signal.SIGINT, None)
    assert not server.restarting
    assert await app.state.readiness.reasons() == ["the server is shutting down"]
