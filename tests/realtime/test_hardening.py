"""Hostile and careless input over the wire: each is answered with an error naming its event, within limits."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import time
from typing import Any

import numpy as np
import websockets

from speech_to_speech.testing.client_audio import silence, spoken_turn
from speech_to_speech.testing.event_matchers import is_error_for
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ClientFactory, ServerFactory

RATE = 24000


async def _error_for(client: RealtimeTestClient, event_id: str) -> dict[str, Any]:
    events = await client.collect_until(is_error_for(event_id))
    return dict(events[-1]["error"])


def _errors_for(client: RealtimeTestClient, event_id: str) -> list[dict[str, Any]]:
    return [r.event for r in client.received if is_error_for(event_id)(r.event)]


async def _still_works(client: RealtimeTestClient) -> None:
    await client.send("response.create")
    events = await client.collect_until("response.done")
    assert events[-1]["response"]["status"] == "completed"


async def _wait_unit_free(server: RunningServer, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while any(slot.state != "idle" for slot in server.pool.status()):
        assert time.monotonic() < deadline, f"units not idle: {server.pool.status()}"
        await asyncio.sleep(0.05)


async def test_json_nested_past_the_parser_is_an_error_with_the_event_id(connect: ClientFactory) -> None:
    async with connect() as client:
        depth = 200_000
        frame = '{"event_id": "evt_deep", "type": "session.update", "session": ' + "[" * depth + "]" * depth + "}"
        await client.send_raw(frame)
        error = await _error_for(client, "evt_deep")
        assert error["code"] == "unknown_or_invalid_event"
        assert error["type"] == "invalid_request_error"
        await _still_works(client)


async def test_json_nested_past_the_depth_cap_is_refused(connect: ClientFactory) -> None:
    async with connect() as client:
        nested: Any = "leaf"
        for _ in range(40):
            nested = {"n": nested}
        event_id = await client.send("session.update", session={"type": "realtime", "metadata": nested})
        error = await _error_for(client, event_id)
        assert error["code"] == "unknown_or_invalid_event"
        assert "nests deeper" in error["message"]
        await _still_works(client)


async def test_a_frame_over_the_size_cap_is_refused_and_the_session_goes_on(make_server: ServerFactory) -> None:
    server = make_server(max_event_bytes=64 * 1024)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        audio = base64.b64encode(bytes(100 * 1024)).decode()
        event_id = await client.send("input_audio_buffer.append", audio=audio)
        error = await _error_for(client, event_id)
        assert error["code"] == "event_too_large"
        await client.send_raw(b"\x00" * (70 * 1024))  # binary junk over the cap: no event_id to name
        assert (await client.wait_for("error"))["error"]["code"] == "event_too_large"
        await _still_works(client)


async def test_session_content_over_its_limits_is_refused(connect: ClientFactory) -> None:
    tool = {"type": "function", "name": "t", "parameters": {"type": "object"}}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"instructions": "x" * 100_001}, "session.instructions"),
        ({"tools": [{**tool, "name": f"t{i}"} for i in range(129)]}, "session.tools"),
        ({"tools": [{**tool, "parameters": {"type": "nonsense"}}]}, "session.tools[0].parameters"),
        ({"tools": [{**tool, "parameters": {"properties": {"a": {"minLength": -1}}}}]},
         "session.tools[0].parameters"),
        ({"audio": {"output": {"voice": "a voice with spaces"}}}, "session.audio.output.voice"),
        ({"audio": {"output": {"voice": "v" * 65}}}, "session.audio.output.voice"),
        ({"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": -0.1}}}},
         "session.audio.input.turn_detection.server_vad.threshold"),
        ({"audio": {"input": {"format": {"type": "audio/pcm", "rate": 96000}}}}, "session.audio.input.format.rate"),
    ]
    async with connect() as client:
        for patch, param in cases:
            event_id = await client.send("session.update", session={"type": "realtime", **patch})
            error = await _error_for(client, event_id)
            assert error["code"] == "invalid_request_error", patch
            assert error["param"].startswith(param.split(".server_vad")[0]), (param, error)
        await _still_works(client)


async def test_response_content_over_its_limits_is_refused(connect: ClientFactory) -> None:
    async with connect() as client:
        for response, param in [
            ({"instructions": "x" * 100_001}, "response.instructions"),
            ({"tools": "not a list"}, "response.tools"),
            ({"tools": [{"type": "function", "name": "f", "parameters": {"type": 3}}]},
             "response.tools[0].parameters"),
            ({"audio": {"output": {"voice": 12}}}, "response.audio.output.voice"),
        ]:
            event_id = await client.send("response.create", response=response)
            error = await _error_for(client, event_id)
            assert (error["code"], error["param"]) == ("invalid_request_error", param)
        await _still_works(client)


async def test_uncommitted_audio_is_capped_without_turn_detection(make_server: ServerFactory) -> None:
    server = make_server(max_uncommitted_audio_s=1.0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("session.update", session={"type": "realtime", "audio": {"input": {"turn_detection": None}}})
        await client.wait_for("session.updated")
        chunk = base64.b64encode((silence(0.6, RATE) * 32767).astype(np.int16).tobytes()).decode()
        first = await client.send("input_audio_buffer.append", audio=chunk)
        second = await client.send("input_audio_buffer.append", audio=chunk)
        error = await _error_for(client, second)
        assert error["code"] == "input_audio_buffer_full"
        assert not _errors_for(client, first)
        await client.send("input_audio_buffer.commit")
        await client.wait_for("input_audio_buffer.committed")
        third = await client.send("input_audio_buffer.append", audio=chunk)  # room again after the commit
        await client.send("input_audio_buffer.clear")
        await client.wait_for("input_audio_buffer.cleared")
        assert not _errors_for(client, third)


async def test_an_idle_session_is_closed_and_its_unit_freed(make_server: ServerFactory) -> None:
    server = make_server(idle_timeout_s=0.3, num_pipelines=1)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        error = await client.wait_for("error")
        assert error["error"]["code"] == "session_idle_timeout"
        assert await client.wait_closed() == 1000
    await _wait_unit_free(server)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await _still_works(client)


async def test_a_client_that_does_not_read_is_closed_at_the_output_limit(make_server: ServerFactory) -> None:
    """Only its own session ends: its response fails, it gets an error and a 1008 close; the unit is freed."""
    reply = " ".join(["A long sentence for a client that never reads what it is sent."] * 40)
    server = make_server(scripted_replies=[reply], scripted_tts_ms_per_char=60.0, num_pipelines=2,
                         max_pending_output_bytes_per_session=64 * 1024)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((server.host, server.port))
    slow = await websockets.connect(server.ws_url, sock=sock, max_queue=1, max_size=None)
    await slow.send(json.dumps({"type": "response.create", "event_id": "evt_slow"}))
    async with RealtimeTestClient.connect(server.ws_url) as other:
        await other.wait_for("session.created")
        deadline = time.monotonic() + 60
        while sum(slot.state == "busy" for slot in server.pool.status()) > 1:  # the slow session ends
            assert time.monotonic() < deadline, "the slow session was never closed"
            await asyncio.sleep(0.05)
        received = []
        try:
            async for message in slow:
                received.append(json.loads(message))
        except websockets.ConnectionClosed:
            pass
        assert slow.close_code == 1008
        errors = [e["error"]["code"] for e in received if e["type"] == "error"]
        assert "output_limit_exceeded" in errors
        closed = [e for e in received if e["type"] == "session.closed"]
        assert [(e["reason"], "details" in e) for e in closed] == [("output_limit_exceeded", True)]
        done = [e for e in received if e["type"] == "response.done"]
        assert done and done[-1]["response"]["status"] == "failed"
        await other.send("response.create", response={"output_modalities": ["text"]})
        assert (await other.wait_for("response.done"))["response"]["status"] == "completed"
    await _wait_unit_free(server)


async def test_one_large_append_is_heard_as_the_same_audio_in_small_ones(connect: ClientFactory) -> None:
    """A multi-megabyte append is decoded in slices off the event loop: the VAD hears the same turn."""
    turn = spoken_turn(RATE, lead_s=6.0)
    pcm = (np.clip(turn, -1, 1) * 32767).astype("<i2").tobytes()
    starts = []
    for chunk_ms in (100, None):
        async with connect() as client:
            if chunk_ms is None:
                await client.send("input_audio_buffer.append", audio=base64.b64encode(pcm).decode())
            else:
                await client.append_audio(turn, RATE, chunk_ms=chunk_ms)
            starts.append((await client.wait_for("input_audio_buffer.speech_started"))["audio_start_ms"])
            assert (await client.wait_for("response.done"))["response"]["status"] == "completed"
    assert starts[0] == starts[1]
    async with connect() as client:
        odd = base64.b64encode(pcm + b"\x01").decode()  # the odd byte is in the last slice
        event_id = await client.send("input_audio_buffer.append", audio=odd)
        assert (await _error_for(client, event_id))["code"] == "invalid_request_error"
        await _still_works(client)
