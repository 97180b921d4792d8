"""Input transcription on the wire: append-only deltas, authoritative completion, opt-in snapshots."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from speech_to_speech.cpu import gate as cpu_gate
from speech_to_speech.cpu.gate import CpuGate
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.protocol import SNAPSHOT_EXTENSION
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.mcp_server import serving, tools_server
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import ScriptedLLM

from .conftest import ServerFactory

RATE = 24000
TRANSCRIPT = "Could you please read me the weather for tomorrow?"


async def test_snapshots_only_when_opted_in(make_server: ServerFactory) -> None:
    # Word-by-word hypotheses of the scripted STT only (no speculative pass at the pause, no interim ones).
    server = make_server(scripted_transcripts=[TRANSCRIPT], speculation_silence_ms=0, interim_transcript_ms=0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)
        plain = await client.collect_until("conversation.item.input_audio_transcription.completed")
        assert SNAPSHOT_EXTENSION not in types(plain)
        await client.wait_for("response.done")

        updated = await client.update_session({"extensions": [SNAPSHOT_EXTENSION]})
        assert updated["session"]["extensions"] == [SNAPSHOT_EXTENSION]
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
        await client.wait_for("response.done")

    snapshots = [e for e in events if e["type"] == SNAPSHOT_EXTENSION]
    assert snapshots
    completed = events[-1]
    item_id = completed["item_id"]
    assert all(s["item_id"] == item_id for s in snapshots)
    texts = [s["transcript"] for s in snapshots]
    # Cumulative hypotheses: each extends the last, all of them prefixes of the final words.
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
    assert all(TRANSCRIPT.startswith(t) for t in texts)
    assert len(texts[-1].split()) == len(TRANSCRIPT.split()) - 1


async def test_deltas_are_confirmed_words_and_add_up_to_completed(make_server: ServerFactory) -> None:
    server = make_server(scripted_transcripts=[TRANSCRIPT], speculation_silence_ms=0, interim_transcript_ms=0)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
    deltas = [e for e in events if e["type"] == "conversation.item.input_audio_transcription.delta"]
    assert len(deltas) > 1  # streamed, not one piece
    assert all(d["content_index"] == 0 for d in deltas)
    text = "".join(d["delta"] for d in deltas)
    assert text == events[-1]["transcript"] == TRANSCRIPT
    # Partials reach N-1 words; the newest word of the last one is held back (unconfirmed),
    # so the deltas before the final transcript hold N-2 words.
    words = TRANSCRIPT.split()
    assert "".join(d["delta"] for d in deltas[:-1]) == " ".join(words[:-2])


async def test_an_empty_transcript_gets_an_empty_answer_without_asking_the_llm(
    make_server: ServerFactory, llm_requests: list[GenerateResponseRequest]
) -> None:
    server = make_server(scripted_transcripts=[""])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)
        events = await client.collect_until("response.done")
        events += await client.barrier()
    completed = next(e for e in events if e["type"] == "conversation.item.input_audio_transcription.completed")
    assert completed["transcript"] == ""
    # The automatic response opened with the commit closes with nothing said, and only once.
    done = events[types(events).index("response.done")]["response"]
    assert done["status"] == "completed" and done["output"] == []
    assert types(events).count("response.created") == 1
    assert llm_requests == []


async def test_while_the_user_speaks_the_words_so_far_stream_and_the_llm_reads_them_ahead(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interim passes (every 96 ms of voice here): deltas before the turn ends, and the prompt the turn
    would make on those words goes to the LLM to read ahead, before the turn's own request."""
    # Interim passes give way to urgent work wherever a neighbour leaves no CPU: here two CPUs are free.
    monkeypatch.setattr(cpu_gate, "_shared", CpuGate(lambda: 2))
    asked: list[tuple[str, GenerateResponseRequest]] = []
    monkeypatch.setattr(ScriptedLLM, "prefill", lambda self, request: asked.append(("prefill", request)))
    original = ScriptedLLM.generate

    def generate(self: ScriptedLLM, request: GenerateResponseRequest) -> Any:
        asked.append(("reply", request))
        return original(self, request)

    monkeypatch.setattr(ScriptedLLM, "generate", generate)
    server = make_server(scripted_transcripts=[TRANSCRIPT], speculation_silence_ms=0, interim_transcript_ms=96)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE, speech_s=1.2), RATE, pace=1.0)
        events = await client.collect_until("conversation.item.input_audio_transcription.completed")
        await client.wait_for("response.done")
    kinds = types(events)
    stopped = kinds.index("input_audio_buffer.speech_stopped")
    assert "conversation.item.input_audio_transcription.delta" in kinds[:stopped], kinds  # live, not after the turn
    deltas = [e["delta"] for e in events if e["type"] == "conversation.item.input_audio_transcription.delta"]
    assert "".join(deltas) == events[-1]["transcript"] == TRANSCRIPT
    # The session's own prompt is read ahead when it starts; then the turn's, on the words so far.
    prefills = [request for kind, request in asked if kind == "prefill" and request.messages]
    assert prefills and all(r.messages[-1].role == "user" for r in prefills)
    assert [kind for kind, _ in asked][-1] == "reply"
    assert all(kind == "prefill" for kind, _ in asked[: asked.index(("prefill", prefills[0]))])
    assert asked[-1][1].messages[-1].content == TRANSCRIPT


async def test_a_session_s_tools_are_read_ahead_before_anyone_speaks(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt a session's first reply begins with (instructions and tools) is read before the user's
    turn, once its tools are known; a session without tools has a short prompt, not read ahead."""
    asked: list[GenerateResponseRequest] = []
    monkeypatch.setattr(ScriptedLLM, "prefill", lambda self, request: asked.append(request))
    tool = {"type": "function", "name": "lights_off", "parameters": {"type": "object"}}
    server = make_server()
    with serving(tools_server()) as url:
        async with RealtimeTestClient.connect(server.ws_url) as client:
            await client.wait_for("session.created")
            await client.update_session({"tools": [tool, {"type": "mcp", "server_label": "shop", "server_url": url,
                                                          "require_approval": "never"}]})
            await client.wait_for("mcp_list_tools.completed")
            await client.barrier()
    assert all(not request.messages for request in asked)  # nobody spoke: the session's own prompt only
    # Read once its MCP server is listed (not before, to be read again; not at the start, with no tools).
    assert asked and all({"lights_off", "book_table"} <= {tool["name"] for tool in r.tools} for r in asked)


async def test_no_interim_words_and_no_read_ahead_when_turned_off(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[GenerateResponseRequest] = []
    monkeypatch.setattr(ScriptedLLM, "prefill", lambda self, request: asked.append(request))
    server = make_server(scripted_transcripts=[TRANSCRIPT], speculation_silence_ms=0, interim_transcript_ms=96,
                         prefill_during_speech=False)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE, speech_s=1.2), RATE, pace=1.0)
        await client.collect_until("conversation.item.input_audio_transcription.completed")
        await client.wait_for("response.done")
    assert asked == []
