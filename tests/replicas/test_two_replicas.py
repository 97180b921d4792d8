"""Two ``serve`` processes against one redis-server: a session resumes on either, and outlives its server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest

from speech_to_speech.audio.rates import WIRE_RATE
from speech_to_speech.protocol import Event
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.redis_server import RedisServer
from speech_to_speech.testing.serve_process import ServeProcess

from .conftest import two_replicas

# The scripted LLM answers with the whole request it got, slowly enough to be cut in the middle.
REPLY = "I was asked {history} and I say so slowly."


@pytest.fixture
def replicas(redis_server: RedisServer) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    with two_replicas(redis_server, "--scripted_replies", REPLY, "--scripted_token_delay_ms", "60",
                      "--scripted_transcripts", "the third question") as pair:
        yield pair


def _seqs(events: list[Event]) -> list[int]:
    return [e["server_event_seq"] for e in events if "server_event_seq" in e]


def _last_seq(client: RealtimeTestClient) -> int:
    return max(_seqs([r.event for r in client.received]), default=0)


async def _ask(client: RealtimeTestClient, text: str) -> None:
    await client.send("conversation.item.create", item={
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    await client.send("response.create")


async def _resume(url: str, created: Event, cursor: int) -> tuple[RealtimeTestClient, Any, Event]:
    manager = RealtimeTestClient.connect(f"{url}?autostart=0", timeout=15)
    client = await manager.__aenter__()
    await client.send("session.resume", session_id=created["session_id"], resume_token=created["resume_token"],
                      last_received_server_event_seq=cursor)
    resumed = await client.recv(timeout=15)
    assert resumed["type"] == "session.resumed", resumed
    return client, manager, resumed


def _transcript(events: list[Event]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")


async def test_a_resume_on_b_while_a_lives_replaces_a_s_socket_and_loses_nothing(
        replicas: tuple[ServeProcess, ServeProcess]) -> None:
    a, b = replicas
    async with RealtimeTestClient.connect(a.ws_url, timeout=15) as first:
        created = await first.wait_for("session.created")
        await _ask(first, "the first question")
        await first.wait_for("response.done", timeout=30)
        await _ask(first, "the second question")
        await first.wait_for("response.output_audio_transcript.delta", timeout=15)
        cursor = _last_seq(first)
        second, manager, resumed = await _resume(b.ws_url, created, cursor)
        try:
            replaced = await first.wait_for("session.replaced", timeout=15)
            assert replaced["session_id"] == created["session_id"]
            assert await first.wait_closed(timeout=10) is not None
            done = await second.wait_for("response.done", timeout=15)  # A ended it before letting go
            assert done["response"]["status"] == "failed"
            assert "moved to another server" in done["response"]["status_details"]["error"]["message"]
            events = await second.barrier(timeout=15)
            seen_on_b = _seqs([r.event for r in second.received])
            assert seen_on_b == list(range(cursor + 1, cursor + 1 + len(seen_on_b)))  # each once, in order
            on_a = {e["server_event_seq"]: e for e in (r.event for r in first.received) if "server_event_seq" in e}
            on_b = {e["server_event_seq"]: e for e in (r.event for r in second.received) if "server_event_seq" in e}
            assert all(on_a[seq] == on_b[seq] for seq in on_a.keys() & on_b.keys())  # the same events
            assert resumed["resume_token"] != created["resume_token"]
            assert events is not None
        finally:
            await manager.__aexit__(None, None, None)


async def test_a_session_whose_server_was_killed_mid_answer_resumes_on_the_other(
        replicas: tuple[ServeProcess, ServeProcess]) -> None:
    a, b = replicas
    async with RealtimeTestClient.connect(a.ws_url, timeout=15) as first:
        created = await first.wait_for("session.created")
        await _ask(first, "the first question")
        first_answer = _transcript(await first.collect_until("response.done", timeout=30))
        await _ask(first, "the second question")
        cut = await first.wait_for("response.created", timeout=15)
        await first.wait_for("response.output_audio.delta", timeout=15)
        await asyncio.sleep(0.3)  # mid-answer, its events written behind it
        a.kill()
        await asyncio.sleep(0.2)
        cursor = _last_seq(first)
    second, manager, resumed = await _resume(b.ws_url, created, cursor)
    try:
        assert resumed["session"]["id"] == created["session_id"]
        lost = await second.collect_until("response.done", timeout=15)
        seqs = _seqs([resumed, *lost])
        assert seqs == sorted(set(seqs)) and all(s > cursor for s in seqs)  # once each, in order, after the cursor
        done = lost[-1]
        assert done["response"]["id"] == cut["response"]["id"]
        assert done["response"]["status"] == "failed"
        error = done["response"]["status_details"]["error"]
        assert error["code"] == "server_lost" and "server" in error["message"] and "lost" in error["message"]
        await second.append_audio(spoken_turn(WIRE_RATE), WIRE_RATE)
        answer = _transcript(await second.collect_until("response.done", timeout=30))
        asked = re.sub(r"\s+", " ", answer)
        for said in ("user: the first question", first_answer.split(" and I say")[0][:30],
                     "user: the second question", "user: the third question"):
            assert said.strip() in asked, (said, asked)
    finally:
        await manager.__aexit__(None, None, None)


async def test_with_redis_stopped_the_session_keeps_answering_and_metrics_count_the_drops(
        redis_server: RedisServer, replicas: tuple[ServeProcess, ServeProcess]) -> None:
    a, _ = replicas
    async with RealtimeTestClient.connect(a.ws_url, timeout=15) as client:
        await client.wait_for("session.created")
        await _ask(client, "the first question")
        await client.wait_for("response.done", timeout=30)
        redis_server.stop()
        await _ask(client, "the second question")
        done = await client.wait_for("response.done", timeout=60)
        assert done["response"]["status"] == "completed"
        await asyncio.sleep(1.5)
    metrics = a.metrics()
    counts = {m.group(1): float(m.group(2)) for m in
              re.finditer(r's2s_session_store_writes_total\{outcome="(\w+)"\} (\S+)', metrics)}
    assert counts["ok"] > 0
    assert counts["failed"] + counts["dropped"] > 0, counts
