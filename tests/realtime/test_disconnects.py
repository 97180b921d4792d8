"""A client that vanishes at any point of a turn leaves nothing behind for the next session of its unit.

One unit, so the next session is served by the very unit the vanished client
used: it must start clean (no queued item, no thread left over) and its first
response must hold nothing of the old one (only its own response id, only
its own words). A client that closes its socket normally ends its session at
once; one whose connection drops leaves a session that waits out its
disconnect grace (docs/sessions.md), or that the next client evicts when it
needs the unit.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from speech_to_speech.cpu import share
from speech_to_speech.testing.client_audio import spoken_turn, tone
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.server import RunningServer

from .conftest import ServerFactory

RATE = 24000
FILLER = "and this reply goes on for a while so that there is audio to interrupt in the middle of it"
REPLY = f"You said {{heard}}. {FILLER}. <tool_call>lookup {{\"q\": 1}}</tool_call>"

Point = Callable[[RealtimeTestClient], Awaitable[Any]]


async def _in_vad(client: RealtimeTestClient) -> None:
    await client.append_audio(tone(0.6, RATE), RATE)  # speech, and no silence to end it
    await client.wait_for("input_audio_buffer.speech_started")


async def _in_stt(client: RealtimeTestClient) -> None:
    await client.append_audio(spoken_turn(RATE), RATE)
    await client.wait_for("input_audio_buffer.speech_stopped")  # the scripted STT takes 300 ms


async def _in_llm(client: RealtimeTestClient) -> None:
    await _ask(client, "old question")
    await client.wait_for("response.created")  # tokens come every 30 ms: no clause is spoken yet


async def _mid_audio(client: RealtimeTestClient) -> None:
    await _ask(client, "old question")
    await client.wait_for("response.output_audio.delta")


async def _mid_tool_call(client: RealtimeTestClient) -> None:
    await _ask(client, "old question")
    await client.wait_for("response.function_call_arguments.done")  # and no function_call_output follows


async def _after_turn(client: RealtimeTestClient) -> None:
    await client.append_audio(spoken_turn(RATE), RATE)
    await client.wait_for("response.done")


POINTS: dict[str, Point] = {
    "during VAD": _in_vad,
    "during STT": _in_stt,
    "during the LLM": _in_llm,
    "mid-audio": _mid_audio,
    "mid-tool-call": _mid_tool_call,
    "after a whole turn": _after_turn,
}


async def _ask(client: RealtimeTestClient, text: str) -> None:
    await client.send("conversation.item.create", item={
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    await client.send("response.create")


async def _wait_idle(server: RunningServer) -> None:
    deadline = time.monotonic() + 15
    while not all(slot.state == "idle" and slot.healthy for slot in server.pool.status()):
        assert time.monotonic() < deadline, f"unit not idle: {server.pool.status()}"
        await asyncio.sleep(0.02)


async def _threads_back_to(count: int) -> None:
    """The session's threads are gone: a drain thread may outlive the unit's idle mark by a moment."""
    deadline = time.monotonic() + 5
    while threading.active_count() > count:
        names = sorted(t.name for t in threading.enumerate())
        assert time.monotonic() < deadline, f"{threading.active_count()} threads, {count} before: {names}"
        await asyncio.sleep(0.02)


def _queued(server: RunningServer) -> dict[str, int]:
    queues = server.pool.units()[0].queues
    return {name: q.qsize() for name, q in vars(queues).items() if q.qsize()}


# close: a normal close (1000) ends the session at once; abort: the TCP connection drops (no close
# frame) and the session ends when its grace does; evicted: the next client takes the unit before that.
HOW = {"close": 0.5, "abort": 0.5, "evicted": 30.0}


@pytest.mark.parametrize("how", list(HOW))
@pytest.mark.parametrize("point", list(POINTS), ids=list(POINTS))
async def test_the_next_session_starts_clean(make_server: ServerFactory, point: str, how: str) -> None:
    one_unit = make_server(num_pipelines=1, scripted_replies=[REPLY], scripted_token_delay_ms=30,
                           scripted_stt_delay_ms=300, scripted_transcripts=["old spoken words"],
                           disconnect_grace_s=HOW[how])
    await _wait_idle(one_unit)
    share.shared()  # the process's CPU sampler: started by the first session ever, it lives as long as the process
    threads_before = threading.active_count()
    async with RealtimeTestClient.connect(one_unit.ws_url) as gone:
        await gone.wait_for("session.created")
        await POINTS[point](gone)
        if how == "close":
            await gone.close()
        else:
            gone.abort()
    if how == "evicted":
        assert [slot.state for slot in one_unit.pool.status()] == ["busy"]  # the session waits for a resume
    else:
        await _wait_idle(one_unit)
        assert _queued(one_unit) == {}
        await _threads_back_to(threads_before)

    async with RealtimeTestClient.connect(one_unit.ws_url) as fresh:
        first = await fresh.recv()
        assert first["type"] == "session.created"
        await _ask(fresh, "fresh question")
        events = await fresh.collect_until("response.done")
    response_id = events[-1]["response"]["id"]
    assert events[-1]["response"]["status"] == "completed"
    stamped = {e["response_id"] for e in events if "response_id" in e}
    assert stamped == {response_id}
    assert not [e for e in events if e["type"].startswith(("input_audio_buffer.", "conversation.item.input_audio"))]
    words = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert words.strip() == f"You said fresh question. {FILLER}."
    await _wait_idle(one_unit)
    assert _queued(one_unit) == {}
    await _threads_back_to(threads_before)
