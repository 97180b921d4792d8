"""Two replicas on one Redis: a session resumes on either, whether its first replica lives or was killed.

Scripted stages. The takeover runs two servers in this process (so the LLM
requests can be read); the loss runs ``serve`` as a child process and kills
it with SIGKILL in the middle of an answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any

from speech_to_speech.bench.target import started
from speech_to_speech.config import ServerSettings
from speech_to_speech.protocol import Event
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.redis_server import RedisServer
from speech_to_speech.testing.scripted import FAST_SCRIPTED, recorded_requests
from speech_to_speech.testing.server import RunningServer, running_server

REPLY = ("Here is a reply long enough to be cut in the middle. It goes on for a few clauses, "
         "so that audio keeps coming for a while, and it ends here.")


def _settings(redis: RedisServer, **overrides: Any) -> ServerSettings:
    return ServerSettings(**{**FAST_SCRIPTED, "num_pipelines": 2, "scripted_replies": [REPLY] * 8,
                             "session_store": redis.url, **overrides})


@contextlib.contextmanager
def _replicas(redis: RedisServer, **overrides: Any) -> Iterator[tuple[RunningServer, RunningServer]]:
    with running_server(_settings(redis, **overrides)) as a, running_server(_settings(redis, **overrides)) as b:
        yield a, b


async def _ask(client: RealtimeTestClient, text: str) -> None:
    await client.send("conversation.item.create", item={
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    await client.send("response.create")


def _seqs(*clients: RealtimeTestClient) -> list[int]:
    return [r.event["server_event_seq"] for c in clients for r in c.received if "server_event_seq" in r.event]


@contextlib.asynccontextmanager
async def _resume(url: str, created: Event, last_seq: int) -> AsyncIterator[tuple[RealtimeTestClient, Event]]:
    async with RealtimeTestClient.connect(f"{url}?autostart=0", timeout=20) as client:
        await client.send("session.resume", session_id=created["session_id"], resume_token=created["resume_token"],
                          last_received_server_event_seq=last_seq)
        resumed = await client.recv()
        assert resumed["type"] == "session.resumed", resumed
        yield client, resumed


async def test_a_resume_on_b_takes_the_session_from_a_live_a_and_nothing_is_lost_or_doubled(
        redis_server: RedisServer) -> None:
    with _replicas(redis_server, scripted_token_delay_ms=15) as (a, b), recorded_requests() as requests:
        async with RealtimeTestClient.connect(a.ws_url, timeout=20) as first:
            created = await first.wait_for("session.created")
            await _ask(first, "What is the capital of France?")
            await first.wait_for("response.done")
            await first.send("input_audio_buffer.clear")  # a last event, then a pause for the store to write
            await asyncio.sleep(0.5)
            last = _seqs(first)[-1]
            async with _resume(b.ws_url, created, last - 3) as (second, resumed):
                replaced = await first.wait_for("session.replaced")
                assert replaced["session_id"] == created["session_id"]
                assert await first.wait_closed() is not None
                assert resumed["session_id"] == created["session_id"]
                await second.barrier()  # the replay (which holds A's response.done) read before B is asked
                replayed = _seqs(second)
                assert replayed[:3] == [last - 2, last - 1, last]  # after the cursor, once each, in order
                await _ask(second, "And of Italy?")
                created_on_b = await second.wait_for("response.created")
                done = await second.wait_for("response.done")
                assert done["response"]["id"] == created_on_b["response"]["id"]
                assert done["response"]["status"] == "completed"
        seqs = [seq for seq in _seqs(first) if seq <= last - 3] + _seqs(second)  # what the client kept
        assert seqs == list(range(1, len(seqs) + 1))  # every event once, in order, across the two replicas
        on_b = [m.content for m in requests[-1].messages if m.role == "user"]
        assert on_b == ["What is the capital of France?", "And of Italy?"]  # B answers with A's turn in mind


async def test_a_session_whose_replica_was_killed_resumes_on_the_other_with_its_answer_failed(
        redis_server: RedisServer) -> None:
    settings = _settings(redis_server, scripted_token_delay_ms=40)
    with started(settings) as (target_a, child_a), started(settings) as (target_b, _):
        async with RealtimeTestClient.connect(target_a.ws_url, timeout=20, validate=False) as first:
            created = await first.wait_for("session.created")
            await _ask(first, "Tell me a long story.")
            await first.wait_for("response.output_audio.delta")
            await asyncio.sleep(0.3)  # the store is written behind the session
            child_a.process.send_signal(signal.SIGKILL)
            child_a.process.wait(timeout=10)
            await first.wait_closed()
            created_seq = next(r.event["server_event_seq"] for r in first.received
                               if r.event["type"] == "response.created")
        async with _resume(target_b.ws_url, created, created_seq) as (second, resumed):
            assert resumed["session_id"] == created["session_id"]
            lost = await second.wait_for("response.done")
            assert lost["response"]["status"] == "failed"
            assert lost["response"]["status_details"]["error"]["code"] == "server_lost"
            replayed = _seqs(second)
            assert replayed == sorted(set(replayed)) and replayed[0] == created_seq + 1
            await _ask(second, "Then a short one.")
            done = await second.wait_for("response.done")
            assert done["response"]["status"] == "completed"


def _metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


async def test_with_redis_gone_the_session_keeps_answering_and_the_replica_says_what_it_lost(
        redis_server: RedisServer) -> None:
    import httpx

    with running_server(_settings(redis_server)) as server:
        async with RealtimeTestClient.connect(server.ws_url, timeout=20) as client:
            await client.wait_for("session.created")
            assert httpx.get(f"{server.http_url}/ready").status_code == 200
            redis_server.stop()
            await _ask(client, "Are you still there?")
            done = await client.wait_for("response.done")
            assert done["response"]["status"] == "completed"  # Redis is off the audio path
            await asyncio.sleep(1.5)  # the writer gives up on what it could not write
            ready = httpx.get(f"{server.http_url}/ready")
            assert ready.status_code == 503 and any("session store unreachable" in r for r in ready.json()["reasons"])
            metrics = httpx.get(f"{server.http_url}/metrics").text
            lost = (_metric(metrics, 's2s_session_store_writes_total{outcome="dropped"}')
                    + _metric(metrics, 's2s_session_store_writes_total{outcome="failed"}'))
            assert lost > 0
