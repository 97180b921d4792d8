"""Barge-in and response.cancel over the wire: what closes, in what order, and that nothing stale follows."""

from __future__ import annotations

from typing import Any

from speech_to_speech.protocol import Event
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import of_response, types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

RATE = 24000
# Long enough (80 tokens at 15 ms, over a second) that the user can speak over it; cancelled, it ends early.
LONG_REPLY = " ".join(f"Clause number {n} goes on, and on." for n in range(1, 11))
SLOW: dict[str, Any] = {"scripted_token_delay_ms": 15.0, "scripted_tts_ms_per_char": 20.0}


def _response_id(events: list[Event]) -> str:
    return str(next(e for e in events if e["type"] == "response.created")["response"]["id"])


def _is_done(status: str) -> Any:
    return lambda e: e["type"] == "response.done" and e["response"]["status"] == status


async def _start_long_response(client: RealtimeTestClient) -> tuple[str, list[Event]]:
    """Speak a turn and read until the answer's audio is arriving."""
    await client.wait_for("session.created")
    await client.append_audio(spoken_turn(RATE), RATE)
    events = await client.collect_until("response.output_audio.delta")
    return _response_id(events), events


async def test_barge_in_cancels_the_response(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Stop, please."],
                         scripted_replies=[LONG_REPLY, "Stopped."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        old, before = await _start_long_response(client)
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until(_is_done("completed"))
        # The old response's item is still there, ending where it was cut.
        item_id = next(e for e in before if e["type"] == "response.output_item.added")["item"]["id"]
        await client.send("conversation.item.retrieve", item_id=item_id)
        retrieved = (await client.wait_for("conversation.item.retrieved"))["item"]

    kinds = types(events)
    cancelled_at = next(i for i, e in enumerate(events) if _is_done("cancelled")(e))
    cancelled = events[cancelled_at]["response"]
    assert cancelled["id"] == old
    assert cancelled["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
    assert cancelled["output"][0]["status"] == "incomplete"

    # Steps 2 and 3: audio done, transcript done, cancelled response.done, then speech_started.
    audio_done = kinds.index("response.output_audio.done")
    transcript_done = kinds.index("response.output_audio_transcript.done")
    started = kinds.index("input_audio_buffer.speech_started")
    assert audio_done < transcript_done < cancelled_at < started
    assert of_response(old)(events[audio_done]) and of_response(old)(events[transcript_done])

    # Nothing of the old response after its response.done: no audio, no text.
    stale = [e["type"] for e in events[cancelled_at + 1 :] if of_response(old)(e)]
    assert stale == []

    # The transcript done holds exactly the partial text that was sent.
    every = before + events
    sent = "".join(e["delta"] for e in every
                   if e["type"] == "response.output_audio_transcript.delta" and e["response_id"] == old)
    partial = events[transcript_done]["transcript"]
    assert partial == sent
    assert partial and len(partial) < len(LONG_REPLY) and LONG_REPLY.startswith(partial)
    assert retrieved["content"][0]["type"] == "output_audio"
    assert retrieved["content"][0]["transcript"] == partial

    # The next response works: it answers the interruption.
    final = events[-1]["response"]
    assert final["id"] != old
    assert final["output"][0]["content"][0]["transcript"] == "Stopped."
    user = next(e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed")
    assert user["transcript"] == "Stop, please."


async def test_no_interrupt_response_keeps_playing(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Tell me a long story.", "Mm-hmm."],
                         scripted_replies=[LONG_REPLY, "Next."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        updated = await client.update_session(
            {"audio": {"input": {"turn_detection": {"type": "server_vad", "interrupt_response": False}}}})
        assert updated["session"]["audio"]["input"]["turn_detection"]["interrupt_response"] is False
        await client.append_audio(spoken_turn(RATE), RATE)
        before = await client.collect_until("response.output_audio.delta")
        old = _response_id(before)
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until(lambda e: _is_done("completed")(e) and e["response"]["id"] == old)
        if "conversation.item.input_audio_transcription.completed" not in types(events):
            events += await client.collect_until("conversation.item.input_audio_transcription.completed")
        events += await client.barrier()
        # As on OpenAI's server, the turn joins the conversation unanswered; the client may ask.
        await client.send("response.create")
        answer = await client.collect_until("response.done")

    kinds = types(events)
    first_done = next(i for i, e in enumerate(events) if e["type"] == "response.done")
    assert events[first_done]["response"]["status"] == "completed"
    # The user was heard during the reply: speech_started came before the reply ended.
    assert kinds.index("input_audio_buffer.speech_started") < first_done
    transcript = next(e for e in events if e["type"] == "response.output_audio_transcript.done")["transcript"]
    assert transcript == LONG_REPLY
    completed = next(e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed")
    assert completed["transcript"] == "Mm-hmm."
    assert "response.created" not in kinds  # no automatic reply to a turn spoken over the answer
    assert answer[-1]["response"]["output"][0]["content"][0]["transcript"] == "Next."


async def test_response_cancel_mid_response(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[LONG_REPLY, "After the cancel."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        old, _ = await _start_long_response(client)
        await client.send("response.cancel")
        events = await client.collect_until("response.done")
        done = events[-1]["response"]
        assert done["id"] == old
        assert done["status"] == "cancelled"
        assert done["status_details"] == {"type": "cancelled", "reason": "client_cancelled"}
        kinds = types(events)
        assert kinds.index("response.output_audio.done") < kinds.index("response.output_audio_transcript.done")
        # No stale output after the terminal, up to a full round trip later.
        stale = [e["type"] for e in await client.barrier() if of_response(old)(e)]
        assert stale == []
        await client.send("response.create")
        after = await client.collect_until("response.done")
        assert after[-1]["response"]["status"] == "completed"
        assert after[-1]["response"]["output"][0]["content"][0]["transcript"] == "After the cancel."
        assert not [e for e in after if of_response(old)(e)]


async def test_response_cancel_by_id(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=[LONG_REPLY], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        old, _ = await _start_long_response(client)
        await client.send("response.cancel", response_id="resp_not_this_one")
        await client.send("response.cancel", response_id=old)
        done = await client.wait_for("response.done")
        assert done["response"]["status_details"]["reason"] == "client_cancelled"


async def test_response_cancel_with_nothing_active_is_a_no_op(make_server: ServerFactory) -> None:
    server = make_server(scripted_replies=["Still answering."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.send("response.cancel")
        assert await client.barrier() == []
        # A spurious cancel leaves no discard flag behind: the next response is whole.
        await client.send("response.create")
        events = await client.collect_until("response.done")
        assert events[-1]["response"]["status"] == "completed"
        assert "response.output_audio.delta" in types(events)
        transcript = next(e for e in events if e["type"] == "response.output_audio_transcript.done")
        assert transcript["transcript"] == "Still answering."
        # And after a finished response, cancel is again a no-op.
        await client.send("response.cancel")
        assert await client.barrier() == []


async def test_cancel_a_response_still_waiting_for_its_transcript(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=["Slow words."], scripted_replies=["Never said.", "Said."],
                         scripted_stt_delay_ms=300)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"audio": {"input": {"turn_detection": None}}})
        await client.append_audio(spoken_turn(RATE), RATE)
        await client.send("input_audio_buffer.commit")
        await client.send("response.create")
        created = await client.wait_for("response.created")
        await client.send("response.cancel")
        events = await client.collect_until("response.done")
        assert events[-1]["response"]["id"] == created["response"]["id"]
        assert events[-1]["response"]["status"] == "cancelled"
        assert not [e for e in events if e["type"].startswith("response.output")]
        await client.wait_for("conversation.item.input_audio_transcription.completed")
        assert not [k for k in types(await client.barrier()) if k.startswith("response.")]
        await client.send("response.create")
        after = await client.collect_until("response.done")
        assert after[-1]["response"]["status"] == "completed"


async def test_barge_in_before_any_output(make_server: ServerFactory) -> None:
    """A response still waiting for its first token is cancelled too, with no output events."""
    server = make_server(scripted_transcripts=["First.", "Second."], scripted_replies=["Slow start.", "Fine."],
                         scripted_token_delay_ms=400)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)
        created = await client.wait_for("response.created")
        old = created["response"]["id"]
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until(_is_done("completed"))
    kinds = types(events)
    cancelled_at = next(i for i, e in enumerate(events) if _is_done("cancelled")(e))
    cancelled = events[cancelled_at]["response"]
    assert cancelled["id"] == old
    assert cancelled["status_details"]["reason"] == "turn_detected"
    assert cancelled["output"] == []
    assert cancelled_at < kinds.index("input_audio_buffer.speech_started")
    assert not [e for e in events if of_response(old)(e) and e["type"] != "response.done"]
    assert events[-1]["response"]["output"][0]["content"][0]["transcript"] == "Fine."


async def test_cancel_then_create_back_to_back(make_server: ServerFactory) -> None:
    """The next response.create right behind a cancel gets a whole response and nothing of the old one."""
    server = make_server(scripted_replies=[LONG_REPLY, "The new one."], **SLOW)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        old, _ = await _start_long_response(client)
        await client.send("response.cancel")
        await client.send("response.create")
        events = await client.collect_until(_is_done("completed"))
    done_at = next(i for i, e in enumerate(events) if e["type"] == "response.done")
    assert events[done_at]["response"]["id"] == old
    assert not [e["type"] for e in events[done_at + 1 :] if of_response(old)(e)]
    new = events[-1]["response"]
    assert new["output"][0]["content"][0]["transcript"] == "The new one."
    audio = [e for e in events[done_at + 1 :] if e["type"] == "response.output_audio.delta"]
    assert audio and all(e["response_id"] == new["id"] for e in audio)
