"""A stage that hangs fails only its own session's response; its unit is replaced once the session ends."""

from __future__ import annotations

import asyncio
import time

from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ServerFactory


async def _wait(server: RunningServer, condition: str, test: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not test(server.pool.status()):  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{condition}: {server.pool.status()}"
        await asyncio.sleep(0.05)


async def test_a_hung_llm_fails_the_response_and_its_unit_is_rebuilt(make_server: ServerFactory) -> None:
    # Every token takes 4 s: to the session, a model that hangs.
    server = make_server(num_pipelines=2, scripted_token_delay_ms=4000, response_stall_timeout_s=0.5,
                         release_timeout_s=0.5)
    async with RealtimeTestClient.connect(server.ws_url) as stuck, RealtimeTestClient.connect(server.ws_url) as other:
        await stuck.wait_for("session.created")
        await other.wait_for("session.created")
        await stuck.send("response.create")
        events = await stuck.collect_until("response.done")
        errors = [e["error"] for e in events if e["type"] == "error"]
        assert [e["code"] for e in errors] == ["response_stalled"]
        assert events[-1]["response"]["status"] == "failed"
        # The session goes on: its events are still answered.
        event_id = await stuck.send("conversation.item.retrieve", item_id="item_none")
        assert (await stuck.wait_for("error"))["error"]["event_id"] == event_id
        assert other.close_code is None
    await _wait(server, "the hung unit was not rebuilt",
                lambda slots: sum(s.rebuilds for s in slots) >= 1 and all(s.state == "idle" for s in slots))


async def test_a_hung_stt_fails_the_response_waiting_for_the_transcript(make_server: ServerFactory) -> None:
    server = make_server(scripted_stt_delay_ms=4000, response_stall_timeout_s=0.5, release_timeout_s=0.5)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(24000), 24000)
        events = await client.collect_until("response.done")
        assert "response_stalled" in [e["error"]["code"] for e in events if e["type"] == "error"]
        assert events[-1]["response"]["status"] == "failed"
    await _wait(server, "the unit was not free again", lambda slots: all(s.state == "idle" for s in slots))
