"""Fixtures: a real server with scripted backends on a free loopback port, and clients of it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, ExitStack
from types import ModuleType
from typing import Any

import httpx
import pytest

from speech_to_speech.config import ServerSettings
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import FAST_SCRIPTED, recorded_requests
from speech_to_speech.testing.server import RunningServer, running_server

SCRIPTED = FAST_SCRIPTED

ServerFactory = Callable[..., RunningServer]
ClientFactory = Callable[..., AbstractAsyncContextManager[RealtimeTestClient]]


@pytest.fixture
def make_server() -> Iterator[ServerFactory]:
    """Start servers with scripted backends (setting overrides as keywords); stopped after the test."""
    with ExitStack() as stack:

        def make(**overrides: Any) -> RunningServer:
            settings = ServerSettings(**{**SCRIPTED, **overrides})
            return stack.enter_context(running_server(settings))

        yield make


@pytest.fixture(scope="module")
def shared_server() -> Iterator[RunningServer]:
    with running_server(ServerSettings(**{**SCRIPTED, "num_pipelines": 2})) as server:
        yield server


@pytest.fixture
def server(shared_server: RunningServer) -> RunningServer:
    """The module's server with default scripted settings, every unit idle (nothing left from the last test)."""
    deadline = time.monotonic() + 10
    while not all(slot.state == "idle" and slot.healthy for slot in shared_server.pool.status()):
        if time.monotonic() > deadline:
            raise AssertionError(f"units still busy: {shared_server.pool.status()}")
        time.sleep(0.01)
    return shared_server


@pytest.fixture
def connect(server: RunningServer) -> ClientFactory:
    """``async with connect() as client``: a validated client of ``server``, past session.created."""
    return lambda **kwargs: _session(server, **kwargs)


def _session(server: RunningServer, **kwargs: Any) -> AbstractAsyncContextManager[RealtimeTestClient]:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def session() -> AsyncIterator[RealtimeTestClient]:
        async with RealtimeTestClient.connect(server.ws_url, **kwargs) as client:
            await client.wait_for("session.created")
            yield client

    return session()


@pytest.fixture
def llm_requests() -> Iterator[list[GenerateResponseRequest]]:
    """Every request the scripted LLM receives (what the model was asked), in order."""
    with recorded_requests() as seen:
        yield seen


@pytest.fixture
def rtc(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The aiortc test client, on a host whose only interface is loopback and that may ask no STUN server."""
    pytest.importorskip("aiortc")
    import ifaddr
    from aiortc.rtcicetransport import RTCIceGatherer

    from speech_to_speech.testing import webrtc_client

    adapters = ifaddr.get_adapters
    monkeypatch.setattr(ifaddr, "get_adapters",
                        lambda *args, **kwargs: [a for a in adapters(*args, **kwargs) if a.name == "lo"])

    def no_default_stun() -> list[Any]:
        raise AssertionError("aiortc was given no ICE server list and would ask a public STUN server")

    monkeypatch.setattr(RTCIceGatherer, "getDefaultIceServers", staticmethod(no_default_stun))
    yield webrtc_client


async def pool_states(server: RunningServer) -> list[str]:
    """Each unit's state, as ``GET /v1/pool`` says."""
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
        return [p["state"] for p in (await http.get("/v1/pool")).json()["pipelines"]]


async def wait_idle(server: RunningServer, timeout: float = 10.0) -> float:
    """Poll ``GET /v1/pool`` until every unit is idle; returns how long that took. Fails after ``timeout``."""
    start = time.monotonic()
    while (states := await pool_states(server)) != ["idle"] * len(states):
        if time.monotonic() - start > timeout:
            raise AssertionError(f"units not idle after {timeout}s: {states}")
        await asyncio.sleep(0.05)
    return time.monotonic() - start
