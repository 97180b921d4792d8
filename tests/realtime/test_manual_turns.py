"""Manual turns: ``turn_detection: null`` means commit ends a turn and only response.create answers."""

from __future__ import annotations

from typing import Any

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.client_audio import spoken_turn, tone
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.realtime_client import RealtimeTestClient

from .conftest import ServerFactory

RATE = 24000


async def _manual_client(client: RealtimeTestClient) -> None:
    await client.wait_for("session.created")
    updated = await client.update_session({"audio": {"input": {"turn_detection": None}}})
    assert updated["session"]["audio"]["input"]["turn_detection"] is None


async def test_speech_alone_starts_nothing(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _manual_client(client)
        await client.append_audio(spoken_turn(RATE), RATE)
        quiet = await client.barrier()
        assert quiet == [], types(quiet)


async def test_commit_transcribes_without_responding(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["Manual words."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _manual_client(client)
        await client.append_audio(spoken_turn(RATE), RATE)
        await client.send("input_audio_buffer.commit")
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
        committed = next(e for e in events if e["type"] == "input_audio_buffer.committed")
        completed = events[-1]
        assert completed["item_id"] == committed["item_id"]
        assert completed["transcript"] == "Manual words."
        assert not [e for e in events if e["type"].startswith("input_audio_buffer.speech")]
        # Everything the commit caused has arrived by the barrier: no response among it.
        later = await client.barrier()
        assert not [k for k in types(later) if k.startswith("response.")], types(later)
    assert llm_requests == []


async def test_one_response_per_response_create(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["First question.", "Second question."],
                         scripted_replies=["First answer.", "Second answer."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _manual_client(client)
        responses = []
        for _ in range(2):
            await client.append_audio(spoken_turn(RATE), RATE)
            await client.send("input_audio_buffer.commit")
            await client.wait_for("conversation.item.input_audio_transcription.completed")
            await client.send("response.create")
            events = await client.response_cycle()
            assert types(events).count("response.created") == 1
            responses.append(events[-1]["response"])
            assert not [k for k in types(await client.barrier()) if k.startswith("response.")]
    assert [r["status"] for r in responses] == ["completed", "completed"]
    assert [r["output"][0]["content"][0]["transcript"] for r in responses] == ["First answer.", "Second answer."]
    assert [m.content for m in llm_requests[1].messages if m.role == "user"] == ["First question.", "Second question."]


async def test_response_create_right_after_commit_includes_the_transcript(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    # A slow STT makes the response wait for the transcript it must include.
    server = make_server(scripted_transcripts=["Just committed."], scripted_stt_delay_ms=200)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _manual_client(client)
        await client.append_audio(spoken_turn(RATE), RATE)
        await client.send("input_audio_buffer.commit")
        await client.send("response.create")
        events = await client.response_cycle()
        assert types(events).count("response.created") == 1
        assert events[-1]["response"]["status"] == "completed"
        assert not [k for k in types(await client.barrier()) if k.startswith("response.")]
    (request,) = llm_requests
    assert [m.content for m in request.messages if m.role == "user"] == ["Just committed."]


async def test_commit_of_audio_without_a_pause(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    """Pure tone with no trailing silence: the commit alone ends the turn."""
    server = make_server(scripted_transcripts=["Cut short."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _manual_client(client)
        await client.append_audio(tone(0.5, RATE), RATE)
        await client.send("input_audio_buffer.commit")
        completed = await client.wait_for("conversation.item.input_audio_transcription.completed")
        assert completed["transcript"] == "Cut short."
        assert 0.45 <= completed["usage"]["seconds"] <= 0.55


async def test_commit_under_server_vad(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    """A client may commit while server VAD is on: the turn ends now and gets a transcript."""
    server = make_server(scripted_transcripts=["Committed early."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(tone(0.6, RATE), RATE)
        await client.wait_for("input_audio_buffer.speech_started")
        await client.send("input_audio_buffer.commit")
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
        committed = [e for e in events if e["type"] == "input_audio_buffer.committed"]
        assert len(committed) == 1
        assert events[-1]["item_id"] == committed[0]["item_id"]
        await client.send("response.create")
        done = (await client.response_cycle())[-1]
        assert done["response"]["status"] == "completed"


async def test_commit_of_silence_under_server_vad_does_not_block_responses(make_server: ServerFactory) -> None:
    """Silence committed while server VAD is on must not leave a transcript pending forever."""
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE, speech_s=0.0, silence_s=0.5), RATE)
        await client.send("input_audio_buffer.commit")
        await client.wait_for("input_audio_buffer.committed")
        await client.send("response.create")
        done = (await client.response_cycle(timeout=5))[-1]
        assert done["response"]["status"] == "completed"


async def test_clear_drops_uncommitted_audio(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await _manual_client(client)
        await client.append_audio(tone(0.5, RATE), RATE)
        await client.send("input_audio_buffer.clear")
        await client.wait_for("input_audio_buffer.cleared")
        event_id = await client.send("input_audio_buffer.commit")
        error = await client.wait_for("error")
        assert error["error"]["code"] == "input_audio_buffer_commit_empty"
        assert error["error"]["event_id"] == event_id


async def _manual_16k(client: RealtimeTestClient) -> None:
    await client.wait_for("session.created")
    await client.update_session({"audio": {"input": {"turn_detection": None,
                                                     "format": {"type": "audio/pcm", "rate": 16000}}}})


def _as_ga(event: dict[str, Any]) -> dict[str, Any]:
    # 16 kHz input (no resampling, so sample counts are exact) is our extension to the GA schema.
    if event.get("session"):
        event["session"]["audio"]["input"]["format"]["rate"] = 24000
    return event


async def test_commit_includes_every_appended_sample(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url, extension_view=_as_ga) as client:
        await _manual_16k(client)
        await client.append_audio(tone(0.5, 16000), 16000)  # 8000 samples: 15 whole VAD chunks and a part
        await client.send("input_audio_buffer.commit")
        completed = await client.wait_for("conversation.item.input_audio_transcription.completed")
    # All 0.5 s, at most padded up to the next 32 ms chunk.
    assert 0.5 <= completed["usage"]["seconds"] <= 0.532


async def test_clear_drops_a_partial_chunk_too(make_server: ServerFactory) -> None:
    server = make_server()
    async with RealtimeTestClient.connect(server.ws_url, extension_view=_as_ga) as client:
        await _manual_16k(client)
        await client.append_audio(tone(0.02, 16000), 16000)  # 320 samples: less than one VAD chunk
        await client.send("input_audio_buffer.clear")
        await client.wait_for("input_audio_buffer.cleared")
        await client.append_audio(tone(0.5, 16000), 16000)
        await client.send("input_audio_buffer.commit")
        completed = await client.wait_for("conversation.item.input_audio_transcription.completed")
    assert 0.5 <= completed["usage"]["seconds"] <= 0.532


async def test_create_response_false_detects_turns_but_waits(
        make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]) -> None:
    server = make_server(scripted_transcripts=["Heard, not answered."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session(
            {"audio": {"input": {"turn_detection": {"type": "server_vad", "create_response": False}}}})
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
        assert types(events)[:2] == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped"]
        assert not [k for k in types(await client.barrier()) if k.startswith("response.")]
        assert llm_requests == []
        await client.send("response.create")
        assert (await client.response_cycle())[-1]["response"]["status"] == "completed"
    assert [m.content for m in llm_requests[0].messages] == ["Heard, not answered."]
