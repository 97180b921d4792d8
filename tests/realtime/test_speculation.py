"""Speculative responses: the reply starts at a pause and is spoken only once the turn ends."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.testing.client_audio import silence, spoken_turn, tone
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import ScriptedLLM

from .conftest import ServerFactory

RATE = 24000
TRANSCRIPT = "What is the capital of France?"


async def test_a_turn_is_answered_once_by_its_speculative_response(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    server = make_server(scripted_transcripts=[TRANSCRIPT], scripted_replies=["Paris."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("response.done")
        events += await client.barrier()
    # The LLM was asked once, at the pause, before the turn ended...
    assert len(llm_requests) == 1
    assert llm_requests[0].messages[-1].content == TRANSCRIPT
    kinds = types(events)
    # ...yet none of its output reached the wire before the turn's end and transcript.
    completed = kinds.index("conversation.item.input_audio_transcription.completed")
    assert kinds.index("input_audio_buffer.speech_stopped") < kinds.index("response.created")
    assert completed < kinds.index("response.output_item.added")
    assert kinds.count("response.created") == 1
    done = events[kinds.index("response.done")]
    assert done["response"]["status"] == "completed"
    transcript = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert transcript == "Paris."


async def test_speech_after_the_pause_discards_the_speculation(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    # A pause longer than the speculation point but shorter than the end-of-turn silence.
    # Slow tokens: the first speculation is still generating when the user speaks again.
    first = "One two three four five six seven eight nine ten eleven twelve."
    server = make_server(scripted_transcripts=[TRANSCRIPT], scripted_replies=[first, "Second."],
                         min_silence_ms=400, speculation_silence_ms=64, scripted_token_delay_ms=40)
    turn = np.concatenate([silence(0.1, RATE), tone(0.5, RATE), silence(0.2, RATE), tone(0.5, RATE),
                           silence(0.8, RATE)])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(turn, RATE, chunk_ms=32, pace=1.0)  # the pause must take real time
        events = await client.collect_until("response.done")
        events += await client.barrier()
    kinds = types(events)
    assert kinds.count("input_audio_buffer.speech_started") == 1
    # The first speculation was generating when it was discarded; only the second is on the wire.
    assert len(llm_requests) == 2
    assert kinds.count("response.created") == 1 and kinds.count("response.done") == 1
    done = events[kinds.index("response.done")]
    assert done["response"]["id"] == llm_requests[-1].response_id
    wire_ids = {e.get("response_id") or (e.get("response") or {}).get("id") for e in events} - {None}
    assert wire_ids == {done["response"]["id"]}
    spoken = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert spoken == "Second."


async def test_speculation_off_asks_the_llm_only_after_the_turn(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    server = make_server(scripted_transcripts=[TRANSCRIPT], speculation_silence_ms=0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("response.done")
    assert len(llm_requests) == 1
    assert events[-1]["response"]["status"] == "completed"


async def test_manual_turns_never_speculate(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    server = make_server(scripted_transcripts=[TRANSCRIPT])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.update_session({"audio": {"input": {"turn_detection": None}}})
        await client.append_audio(spoken_turn(RATE), RATE)
        await client.send("input_audio_buffer.commit")
        await client.wait_for("conversation.item.input_audio_transcription.completed")
        events = await client.barrier()
    assert llm_requests == []
    assert not [k for k in types(events) if k.startswith("response.")]


async def test_a_speculation_that_finishes_after_the_turn_still_feeds_its_response(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    # The STT is slower than the end-of-turn silence: the turn's response is already open when the
    # speculative transcript arrives, and the LLM starts on it then; the final pass reuses it.
    server = make_server(scripted_transcripts=[TRANSCRIPT], scripted_replies=["Paris."],
                         min_silence_ms=300, scripted_stt_delay_ms=600)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        # On a slow machine the wait passes the preamble's second: this test is about the answer only.
        await client.update_session({"preamble_after_ms": None})
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("response.done")
        events += await client.barrier()
    kinds = types(events)
    assert len(llm_requests) == 1
    assert kinds.count("response.created") == 1
    done = events[kinds.index("response.done")]["response"]
    assert done["status"] == "completed"
    assert done["id"] == llm_requests[0].response_id
    assert done["output"][0]["content"][0]["transcript"] == "Paris."


async def test_a_turn_whose_words_grew_after_a_stale_speculation_is_answered(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    # Two bursts of speech: a speculation at the first pause hears "Please tell me" and the turn
    # says more. The STT is slow: the user speaks again before that speculation's transcript is
    # in, and the turn ends before the second one is. The LLM is slow too: the stale speculation
    # is still generating when the turn's real request goes out under the same response id.
    first, full = "Please tell me", "Please tell me a very long story about a knight."
    server = make_server(scripted_transcripts=[f"{first} | a very long story about a knight."],
                         scripted_replies=["You said: {heard} " + "Once upon a time there was a knight. " * 3],
                         min_silence_ms=300, speculation_silence_ms=64, scripted_stt_delay_ms=300,
                         scripted_token_delay_ms=40)
    turn = np.concatenate([silence(0.1, RATE), tone(0.5, RATE), silence(0.2, RATE), tone(0.5, RATE),
                           silence(1.0, RATE)])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(turn, RATE, chunk_ms=20, pace=1.0)
        events = await client.collect_until("response.done", timeout=20)
        events += await client.barrier()
    kinds = types(events)
    completed = [e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed"]
    assert [e["transcript"] for e in completed] == [full]
    assert kinds.count("response.created") == 1 and kinds.count("response.done") == 1
    done = events[kinds.index("response.done")]["response"]
    assert done["status"] == "completed", done["status_details"]
    spoken = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert spoken.startswith(f"You said: {full} Once upon a time")
    assert "response.output_audio.delta" in kinds
    # No speculation on words the user had already gone past was ever sent to the LLM.
    assert all(r.messages[-1].content == full for r in llm_requests)


async def test_a_response_the_client_asks_for_during_a_pause_stops_the_speculation(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The speculation's reply is long and slow; the client's own response.create during the pause
    # must stop it at once rather than leave the LLM busy with it for seconds.
    tokens: list[int] = []  # parts each request's generation yielded before it was stopped
    original = ScriptedLLM.generate

    def generate(self: ScriptedLLM, request: GenerateResponseRequest) -> Any:
        tokens.append(0)
        index = len(tokens) - 1
        for part in original(self, request):
            tokens[index] += 1
            yield part

    monkeypatch.setattr(ScriptedLLM, "generate", generate)
    long_reply = " ".join(["word"] * 40) + "."
    server = make_server(scripted_transcripts=[TRANSCRIPT], scripted_replies=[long_reply, "Asked for."],
                         min_silence_ms=400, scripted_token_delay_ms=40)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(np.concatenate([silence(0.1, RATE), tone(0.5, RATE), silence(0.2, RATE)]),
                                  RATE, chunk_ms=20, pace=1.0)  # the speculation starts in this pause
        await client.send("response.create", response={"metadata": {"asked": "yes"}})
        await client.append_audio(silence(0.6, RATE), RATE, chunk_ms=20, pace=1.0)
        events = await client.collect_until("response.done", timeout=20)
    done = events[-1]["response"]
    assert {k: v for k, v in done["metadata"].items() if k != "playback"} == {"asked": "yes"}
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0]["transcript"] == "Asked for."
    assert tokens[0] < 20  # of the speculation's 41 tokens: stopped, not run out
