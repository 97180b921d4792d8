"""A stage that fails, or output that cannot be put on the wire, never ends a session silently.

The client gets an ``error`` (type ``server_error``) and the response the
failure concerns ends ``failed``; the session goes on and answers the next
turn. The faulty backends are registered under test-only names.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from speech_to_speech import registry
from speech_to_speech.pipeline.messages.input_audio import Utterance
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TTSInput
from speech_to_speech.testing.client_audio import spoken_turn
from speech_to_speech.testing.event_matchers import types
from speech_to_speech.testing.realtime_client import RealtimeTestClient
from speech_to_speech.testing.scripted import EnergyVAD, ScriptedSTT, ScriptedTTS

from .conftest import ServerFactory

RATE = 24000


class FailsFirst:
    """A test backend's model: fails its first call (per server), else does what ``scripted`` does."""

    def __init__(self, scripted: Any = None) -> None:
        self._scripted = scripted
        self._calls = itertools.count()

    def first_call(self) -> bool:
        return next(self._calls) == 0

    def next(self) -> str:  # the scripted STT's next transcript
        return str(self._scripted.next())


@registry.register("tts", "test-first-clause-fails", lambda settings: FailsFirst())
class FirstClauseFailsTTS(ScriptedTTS):
    def synthesize(self, text: str, voice: str | None, language: str | None) -> Iterator[npt.NDArray[Any]]:
        if self.model.first_call():
            raise RuntimeError("the vocoder ran out of memory")
        yield from super().synthesize(text, voice, language)


@registry.register("tts", "test-unencodable-audio", lambda settings: FailsFirst())
class UnencodableAudioTTS(ScriptedTTS):
    """Its first clause is audio no wire format can carry (a backend bug the send loop meets)."""

    def process(self, item: TTSInput) -> Iterator[Any]:
        if self.model.first_call():
            yield AudioOutput(item.response_id, item.generation, np.array([None, None], dtype=object), RATE)
            return
        yield from super().process(item)


@registry.register("stt", "test-first-pass-fails",
                   lambda settings, context: FailsFirst(registry.get("stt", "scripted").load(settings, context)))
class FirstPassFailsSTT(ScriptedSTT):
    def transcribe_utterance(self, item: Utterance) -> tuple[str, str | None]:
        if self.model.first_call():
            raise RuntimeError("the decoder crashed")
        return super().transcribe_utterance(item)


@registry.register("vad", "test-always-fails", lambda settings: None)
class AlwaysFailsVAD(EnergyVAD):
    def speech_probability(self, chunk: Any) -> float:
        raise RuntimeError("the VAD model is corrupt")


async def _two_turns(server_url: str, pace: float | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Speak a turn, collect until its response.done; then another: (first turn's events, second's).

    ``pace``: the first turn's audio streams in real time (1.0), so its pause is a pause to the server.
    """
    async with RealtimeTestClient.connect(server_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE, chunk_ms=20, pace=pace)
        first = await client.collect_until("response.done")
        first += await client.barrier()
        await client.append_audio(spoken_turn(RATE), RATE)
        second = await client.collect_until("response.done")
    return first, second


def _error(events: list[dict[str, Any]]) -> dict[str, Any]:
    (error,) = [e["error"] for e in events if e["type"] == "error"]
    return error


def _assert_answered(events: list[dict[str, Any]], reply: str) -> None:
    assert events[-1]["response"]["status"] == "completed"
    assert "error" not in types(events)
    spoken = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert spoken == reply and "response.output_audio.delta" in types(events)


async def test_a_tts_failure_fails_its_response_and_the_next_turn_is_answered(make_server: ServerFactory) -> None:
    server = make_server(tts="test-first-clause-fails", scripted_replies=["Paris."])
    first, second = await _two_turns(server.ws_url)
    error = _error(first)
    assert (error["type"], error["code"]) == ("server_error", "tts_failed")
    assert "vocoder ran out of memory" in error["message"]
    assert [e["response"]["status"] for e in first if e["type"] == "response.done"] == ["failed"]
    assert types(first).index("error") < types(first).index("response.done")
    _assert_answered(second, "Paris.")


async def test_output_that_cannot_be_encoded_fails_the_response_not_the_session(make_server: ServerFactory) -> None:
    server = make_server(tts="test-unencodable-audio", scripted_replies=["Paris."])
    first, second = await _two_turns(server.ws_url)
    error = _error(first)
    assert (error["type"], error["code"]) == ("server_error", "server_error")
    assert [e["response"]["status"] for e in first if e["type"] == "response.done"] == ["failed"]
    assert not [e for e in first if e["type"] == "response.output_audio.delta"]
    _assert_answered(second, "Paris.")


async def test_an_stt_failure_fails_the_transcription_and_its_response(make_server: ServerFactory) -> None:
    server = make_server(stt="test-first-pass-fails", speculation_silence_ms=0, interim_transcript_ms=0,
                         scripted_replies=["Paris."],
                         scripted_transcripts=["What is the capital of France?"])
    first, second = await _two_turns(server.ws_url)
    kinds = types(first)
    (failed,) = [e for e in first if e["type"] == "conversation.item.input_audio_transcription.failed"]
    assert failed["error"]["code"] == "stt_failed" and "decoder crashed" in failed["error"]["message"]
    assert "conversation.item.input_audio_transcription.completed" not in kinds
    assert _error(first)["code"] == "stt_failed"
    assert [e["response"]["status"] for e in first if e["type"] == "response.done"] == ["failed"]
    assert kinds.index("input_audio_buffer.committed") < kinds.index(failed["type"])
    _assert_answered(second, "Paris.")


async def test_a_failed_speculative_pass_is_redone_at_the_turns_end_without_an_error(
    make_server: ServerFactory,
) -> None:
    server = make_server(stt="test-first-pass-fails", scripted_replies=["Paris."],
                         scripted_transcripts=["What is the capital of France?"])
    first, _ = await _two_turns(server.ws_url, pace=1.0)
    assert "error" not in types(first)
    completed = [e for e in first if e["type"] == "conversation.item.input_audio_transcription.completed"]
    assert [e["transcript"] for e in completed] == ["What is the capital of France?"]
    _assert_answered(first, "Paris.")


async def test_a_stage_failing_on_every_chunk_is_reported_once_and_the_session_goes_on(
    make_server: ServerFactory,
) -> None:
    server = make_server(vad="test-always-fails", scripted_replies=["Paris."])
    async with RealtimeTestClient.connect(server.ws_url) as client:
        await client.wait_for("session.created")
        await client.append_audio(spoken_turn(RATE), RATE)  # about 60 VAD chunks, each one failing
        error = await client.wait_for("error")
        events = await client.barrier()
        await client.send("conversation.item.create", item={
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]})
        await client.send("response.create")
        events += await client.collect_until("response.done")
    assert (error["error"]["type"], error["error"]["code"]) == ("server_error", "vad_failed")
    assert "error" not in types(events)  # the first one was the only one
    _assert_answered(events, "Paris.")
