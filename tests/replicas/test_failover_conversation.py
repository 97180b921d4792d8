"""The whole conversation survives a failover: two ``serve`` processes on Redis, the owner killed with SIGKILL.

Every earlier item is retrievable on the replica that resumes the session,
with its id and transcript; the next answer's request holds the same
history the lost server would have given (an answer heard only in part
enters it as far as it was heard, the answer cut by the kill not at all).
The scripted LLM answers with the whole request it got, so what it was
asked is read off its answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
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

# Long after the history, so that the kill comes while it is being said.
REPLY = "I was asked {history} and I say so slowly, one word at a time, so that I can be cut right here."
ASKED = "I was asked "
SAID = " and I say so slowly"


@pytest.fixture
def replicas(redis_server: RedisServer) -> Iterator[tuple[ServeProcess, ServeProcess]]:
    with two_replicas(redis_server, "--scripted_replies", REPLY, "--scripted_token_delay_ms", "30",
                      "--scripted_transcripts", "I live in Lisbon") as pair:
        yield pair


def _transcript(events: list[Event]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")


def _history(answer: str) -> str:
    """What the scripted LLM was asked, as its answer says it."""
    assert answer.startswith(ASKED) and SAID in answer, answer
    return answer[len(ASKED):answer.rindex(SAID)]


async def _type(client: RealtimeTestClient, text: str) -> list[Event]:
    await client.send("conversation.item.create", item={
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    await client.send("response.create")
    return await client.collect_until(lambda e: e["type"] in ("response.done", "error"), timeout=30)


async def _retrieve(client: RealtimeTestClient, item_id: str) -> dict[str, Any]:
    await client.send("conversation.item.retrieve", item_id=item_id)
    retrieved = await client.wait_for(lambda e: e["type"] in ("conversation.item.retrieved", "error"), timeout=15)
    assert retrieved["type"] == "conversation.item.retrieved", retrieved
    return dict(retrieved["item"])


def _item_ids(client: RealtimeTestClient) -> list[str]:
    ids = [r.event["item"]["id"] for r in client.received if r.event["type"] == "conversation.item.added"]
    return list(dict.fromkeys(ids))


async def test_after_a_sigkill_every_earlier_item_and_the_history_are_restored_on_the_other_replica(
        replicas: tuple[ServeProcess, ServeProcess]) -> None:
    a, b = replicas
    async with RealtimeTestClient.connect(a.ws_url, timeout=15) as first:
        created = await first.wait_for("session.created")
        first_answer = _transcript(await _type(first, "My name is Oliver."))
        await first.hear_out()  # speech over the answer still playing would be judged as a remark over it
        await first.append_audio(spoken_turn(WIRE_RATE), WIRE_RATE)  # a spoken turn: its transcript is stored
        second_answer = _transcript(await first.collect_until("response.done", timeout=30))
        assert "user: I live in Lisbon" in second_answer

        # The third answer is heard only in part: with ack_only it enters the history as far as acknowledged.
        await first.update_session({"type": "realtime", "playback_commit_policy": "ack_only"})
        third = await _type(first, "Tell me something.")
        done = third[-1]["response"]
        mark = next(m for e in third if e["type"] == "response.output_audio.delta"
                    for m in e["metadata"]["audio_text_marks"])
        await first.send("playback.ack", response_id=done["id"], item_id=done["output"][0]["id"],
                         played_ms=mark["audio_end_ms"], committed_ms=mark["audio_end_ms"])
        await first.wait_for("playback.acknowledged", timeout=15)
        heard = _transcript(third)[: mark["text_chars"]].rstrip()
        assert heard and heard != _transcript(third).rstrip()

        before = {item_id: await _retrieve(first, item_id) for item_id in _item_ids(first)}
        assert len(before) == 6  # three user turns, three answers

        # The fourth answer: A is killed while it says what it was asked, so that history is read first.
        await first.send("conversation.item.create", item={
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is my name?"}]})
        await first.send("response.create")
        said: list[str] = []

        def said_its_history(event: Event) -> bool:
            if event["type"] == "response.output_audio_transcript.delta":
                said.append(event["delta"])
            return f"user: What is my name?{SAID}" in "".join(said)

        seen = await first.collect_until(said_its_history, timeout=30)
        await asyncio.sleep(0.2)  # its events written behind it
        a.kill()
        lost_history = _history("".join(said))
        cursor = max(r.event["server_event_seq"] for r in first.received if "server_event_seq" in r.event)
        lost_item = next(e["item"]["id"] for e in seen if e["type"] == "conversation.item.added"
                         and e["item"]["role"] == "assistant")
        await first.wait_closed(timeout=10)

    async with RealtimeTestClient.connect(f"{b.ws_url}?autostart=0", timeout=15) as second:
        await second.send("session.resume", session_id=created["session_id"], resume_token=created["resume_token"],
                          last_received_server_event_seq=cursor)
        resumed = await second.recv(timeout=15)
        assert resumed["type"] == "session.resumed", resumed
        lost = await second.wait_for("response.done", timeout=15)
        assert lost["response"]["status"] == "failed"
        assert lost["response"]["status_details"]["error"]["code"] == "server_lost"

        for item_id, item in before.items():  # the same ids, the same transcripts, the same items
            assert await _retrieve(second, item_id) == item
        cut = await _retrieve(second, lost_item)  # the cut answer is kept, as a failed response's items are
        assert cut["status"] == "incomplete" and cut["content"][0]["transcript"].startswith(ASKED)

        await second.append_audio(spoken_turn(WIRE_RATE), WIRE_RATE)
        next_answer = _transcript(await second.collect_until("response.done", timeout=30))
    # What A would have asked, less the answer that died with it, and the new turn (B's first transcript).
    assert _history(next_answer) == f"{lost_history} | user: I live in Lisbon"
    assert lost_history == (f"user: My name is Oliver. | assistant: {first_answer} | user: I live in Lisbon | "
                            f"assistant: {second_answer} | user: Tell me something. | assistant: {heard} | "
                            "user: What is my name?")


async def test_a_session_stored_by_the_previous_version_resumes_with_its_history(
        redis_server: RedisServer, replicas: tuple[ServeProcess, ServeProcess]) -> None:
    """A state written before the items were stored (the history only) is still read: same turns, new ids."""
    import redis

    a, b = replicas
    async with RealtimeTestClient.connect(a.ws_url, timeout=15) as other:  # a session object as it is written
        session = (await other.wait_for("session.created"))["session"]
    session_id, token = "sess_previous_version", "a-resume-token"
    session = {**session, "id": session_id}
    history = [{"role": "user", "content": "My name is Oliver.", "tool_calls": [], "tool_call_id": None},
               {"role": "assistant", "content": "Hello Oliver.", "tool_calls": [], "tool_call_id": None}]
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.hset(f"s2s:{{{session_id}}}:state", mapping={
            "token": hashlib.sha256(token.encode()).hexdigest(),
            "state": json.dumps({"session": session, "history": history, "last_client_event_id": None})})
    finally:
        client.close()
    async with RealtimeTestClient.connect(f"{b.ws_url}?autostart=0", timeout=15, validate=False) as resumed_client:
        await resumed_client.send("session.resume", session_id=session_id, resume_token=token,
                                  last_received_server_event_seq=0)
        resumed = await resumed_client.recv(timeout=15)
        assert resumed["type"] == "session.resumed", resumed
        events = await _type(resumed_client, "What is my name?")
        answer = _transcript(events)
        assert events[-1]["type"] == "response.done", events[-1]
    assert _history(answer) == "user: My name is Oliver. | assistant: Hello Oliver. | user: What is my name?"
