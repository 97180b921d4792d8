"""Turns ended by how they sound: ``semantic_vad`` with the Smart Turn detector, over the wire.

The server runs the real Silero VAD and the real Smart Turn model on committed
speech (the hibari voice), with scripted STT, LLM and TTS. Speech is streamed
in real time, as a microphone would send it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from speech_to_speech.audio.wav import read_wav
from speech_to_speech.protocol import TIMINGS_EXTENSION, TIMINGS_KEY, TURN_DETECTION_KEY
from speech_to_speech.stt.whisper_window import ends_sentence
from speech_to_speech.testing.client_audio import silence
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.vad.turn_detector import MAX_CONTINUATION

from .conftest import ServerFactory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "turns"
RATE = 24000  # the client's rate (the fixtures are 16 kHz; the server resamples to its 16 kHz)
# Server settings under which only the detector can end a turn within a second of silence:
# its fallback (the silence rule) and its longest wait are both longer than that.
SLOW_SILENCE_MS = 1500
MAX_TURN_SILENCE_MS = 1200


def speech(name: str) -> np.ndarray:
    return read_wav(FIXTURES / f"{name}.wav", RATE)[0]


def semantic(**fields: Any) -> dict[str, Any]:
    return {"extensions": [TIMINGS_EXTENSION],
            "audio": {"input": {"turn_detection": {"type": "semantic_vad", **fields}}}}


def server_vad(silence_ms: int) -> dict[str, Any]:
    return {"extensions": [TIMINGS_EXTENSION],
            "audio": {"input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": silence_ms}}}}


def detecting(make_server: ServerFactory, words: str, min_silence_ms: int = SLOW_SILENCE_MS) -> Any:
    """A server with the real VAD and turn detector, whose scripted STT hears ``words`` in every pass."""
    return make_server(vad="silero", min_silence_ms=min_silence_ms, max_turn_silence_ms=MAX_TURN_SILENCE_MS,
                       scripted_transcripts=[words], scripted_replies=["One eighty."])


@pytest.fixture
def detecting_server(make_server: ServerFactory) -> Any:
    return detecting(make_server, "What is twelve times fifteen?")


async def say(client: RealtimeTestClient, *parts: np.ndarray) -> None:
    await client.append_audio(np.concatenate(parts), RATE, pace=1.0)


async def until_quiet(client: RealtimeTestClient, quiet_s: float = 2.0) -> list[dict[str, Any]]:
    """Events until every turn closed, its response finished, and nothing came for ``quiet_s``."""
    seen: list[dict[str, Any]] = []
    while True:
        try:
            seen.append(await client.recv(quiet_s))
        except TimeoutError:
            kinds = [e["type"] for e in seen]
            open_turns = kinds.count("input_audio_buffer.speech_started") - kinds.count(
                "input_audio_buffer.speech_stopped")
            open_responses = kinds.count("response.created") - kinds.count("response.done")
            if open_turns == 0 and open_responses == 0:
                return seen


def turns(events: list[dict[str, Any]]) -> int:
    return sum(1 for e in events if e["type"] == "input_audio_buffer.speech_stopped")


def decisions(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    metadata = [(e["response"].get("metadata") or {}) for e in events if e["type"] == "response.done"]
    return [json.loads(m[TURN_DETECTION_KEY]) for m in metadata if TURN_DETECTION_KEY in m]


async def test_sessions_start_with_semantic_vad_when_the_server_has_the_detector(detecting_server) -> None:
    async with RealtimeTestClient.connect(detecting_server.ws_url) as client:
        created = await client.wait_for("session.created")
        turn = created["session"]["audio"]["input"]["turn_detection"]
        assert (turn["type"], turn["eagerness"]) == ("semantic_vad", "auto")


async def test_a_finished_question_ends_its_turn_at_the_first_pause(detecting_server) -> None:
    async with RealtimeTestClient.connect(detecting_server.ws_url) as client:
        await client.update_session(semantic())
        await say(client, speech("finished_twelve_fifteen"), silence(1.0, RATE))
        events = await until_quiet(client)
    assert turns(events) == 1  # within 1 s of silence: neither silence rule could have ended it
    [decision] = decisions(events)
    assert decision["detector"] == "smart-turn" and decision["outcome"] == "finished"
    assert decision["probability"] >= 0.5 and decision["inference_ms"] > 0
    done = next(e for e in events if e["type"] == "response.done")
    marks = json.loads(done["response"]["metadata"][TIMINGS_KEY])
    assert marks["turn_asked"] <= marks["turn_decided"] <= marks["vad_end_of_speech"]
    assert done["response"]["status"] == "completed"


async def test_a_finished_turn_ends_only_once_its_held_reply_can_play(make_server: ServerFactory) -> None:
    """The LLM takes ~0.5 s to its first clause, longer than the detector takes to say "finished":
    speech_stopped waits for the held reply's first audio, and the answer comes right after it."""
    server = make_server(vad="silero", min_silence_ms=SLOW_SILENCE_MS, max_turn_silence_ms=MAX_TURN_SILENCE_MS,
                         scripted_transcripts=["What is twelve times fifteen?"], scripted_replies=["One eighty."],
                         scripted_token_delay_ms=250)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.update_session(semantic())
        await say(client, speech("finished_twelve_fifteen"), silence(1.0, RATE))
        events = await until_quiet(client)
    assert turns(events) == 1
    assert [d["outcome"] for d in decisions(events)] == ["finished"]
    done = next(e for e in events if e["type"] == "response.done")
    assert done["response"]["status"] == "completed"
    assert any(e["type"] == "response.output_audio.delta" for e in events)
    marks = json.loads(done["response"]["metadata"][TIMINGS_KEY])
    # The detector decided before the reply could play; the turn ended when it could.
    assert marks["turn_decided"] < marks["tts_first_audio"] <= marks["vad_end_of_speech"]
    assert marks["vad_end_of_speech"] - marks["turn_asked"] < SLOW_SILENCE_MS - 400  # not the silence rule (ms)


async def test_a_phrase_left_hanging_waits_then_ends_after_the_longest_silence(make_server: ServerFactory) -> None:
    server = detecting(make_server, "Tell me about the history of ancient Rome, uh,")
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.update_session(semantic())
        await say(client, speech("unfinished_rome_uh"), silence(MAX_TURN_SILENCE_MS / 1000 + 0.6, RATE))
        events = await until_quiet(client)
    assert turns(events) == 1
    [decision] = decisions(events)
    assert decision["outcome"] == "timed_out" and decision["probability"] < 0.5
    assert decision["words"] == "Tell me about the history of ancient Rome, uh,"
    metrics = httpx.get(server.http_url + "/metrics").text
    assert 's2s_turn_decisions_total{detector="smart-turn",outcome="unfinished"} 1.0' in metrics
    assert 's2s_turn_decisions_total{detector="smart-turn",outcome="timed_out"} 1.0' in metrics


async def test_a_long_pause_mid_thought_is_one_turn_with_the_detector_and_two_by_silence(detecting_server) -> None:
    """The same words, with 700 ms of silence after "… ancient Rome, uh,", in one session that
    switches its turn detection: silence splits them, the detector waits for the rest."""
    thought = (speech("unfinished_rome_uh"), silence(0.7, RATE), speech("continuation_rome"), silence(1.0, RATE))
    async with RealtimeTestClient.connect(detecting_server.ws_url) as client:
        updated = await client.update_session(server_vad(500))
        assert updated["session"]["audio"]["input"]["turn_detection"]["type"] == "server_vad"
        await say(client, *thought)
        by_silence = await until_quiet(client)

        updated = await client.update_session(semantic(eagerness="medium"))
        turn = updated["session"]["audio"]["input"]["turn_detection"]
        assert (turn["type"], turn["eagerness"]) == ("semantic_vad", "medium")
        await say(client, *thought)
        by_detector = await until_quiet(client)
    assert turns(by_silence) == 2 and decisions(by_silence) == []
    assert turns(by_detector) == 1
    assert [d["outcome"] for d in decisions(by_detector)] == ["finished"]


async def test_without_weights_the_server_runs_on_silence_and_says_so(make_server: ServerFactory) -> None:
    server = make_server(vad="silero", smart_turn_model="/nonexistent/smart-turn.onnx", min_silence_ms=600)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        created = await client.wait_for("session.created")
        assert created["session"]["audio"]["input"]["turn_detection"]["type"] == "server_vad"
        updated = await client.update_session(semantic(eagerness="high"))
        turn = updated["session"]["audio"]["input"]["turn_detection"]
        assert turn["type"] == "server_vad" and "eagerness" not in turn
        assert turn["silence_duration_ms"] == 600
        await say(client, speech("finished_twelve_fifteen"), silence(1.0, RATE))
        events = await until_quiet(client)
    assert turns(events) == 1 and decisions(events) == []


async def test_words_that_stop_mid_phrase_keep_a_finished_sounding_turn_open(make_server: ServerFactory) -> None:
    """The audio sounds finished, but the pause's transcript ends on "to": the turn waits for the rest."""
    server = detecting(make_server, "Can you tell me how long it takes to")
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.update_session(semantic())
        await say(client, speech("finished_twelve_fifteen"), silence(MAX_TURN_SILENCE_MS / 1000 + 0.6, RATE))
        events = await until_quiet(client)
    assert turns(events) == 1
    [decision] = decisions(events)
    assert decision["outcome"] == "timed_out" and decision["probability"] >= 0.5
    assert decision["words"] == "Can you tell me how long it takes to"


async def test_sound_and_words_in_dispute_leave_the_turn_to_the_silence_window(make_server: ServerFactory) -> None:
    """It sounds unfinished, but the words are a whole question: the turn ends as silence alone would end it."""
    server = detecting(make_server, "What is twelve times fifteen?", min_silence_ms=600)
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.update_session(semantic())
        await say(client, speech("unfinished_rome_uh"), silence(1.0, RATE))  # under the longest silence
        events = await until_quiet(client)
    assert turns(events) == 1
    [decision] = decisions(events)
    assert decision["outcome"] == "disputed" and decision["probability"] < 0.5


@pytest.mark.real_models
async def test_a_full_stop_whisper_doubts_does_not_end_a_turn_that_sounds_unfinished(
        make_server: ServerFactory) -> None:
    """Speech cut after "… black holes and", with the real STT: Whisper writes "… black holes." but gives the
    "and" a good chance where it put the full stop. Taken at its word, the turn would end at the silence
    window (disputed); weighed with that doubt, it waits for more speech, up to the longest silence."""
    server = make_server(vad="silero", stt="faster-whisper", min_silence_ms=600,
                         max_turn_silence_ms=MAX_TURN_SILENCE_MS, scripted_replies=["Dark matter."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.update_session(semantic())
        await say(client, speech("cut_black_holes_and"), silence(MAX_TURN_SILENCE_MS / 1000 + 0.6, RATE))
        events = await until_quiet(client)
    assert turns(events) == 1
    [decision] = decisions(events)
    assert decision["outcome"] == "timed_out", decision  # not ended at the 600 ms silence window
    assert "black holes" in decision["words"].lower(), decision
    # The full stop (0.46-0.54 of doubt on three instruction sets) may lose to the "and" on another
    # CPU's kernels: then the words end mid-phrase and carry no doubt, and the turn waits all the same.
    if ends_sentence(decision["words"]):
        assert decision["continuation"] >= MAX_CONTINUATION, decision
    else:
        assert decision["continuation"] is None, decision
