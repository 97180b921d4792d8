"""A crashing stage is reported and never silently kills its unit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy.typing as npt

from speech_to_speech.llm.base import GeneratedPart, LLMHandler
from speech_to_speech.pipeline.messages.control import StageError
from speech_to_speech.pipeline.messages.generation import GenerateResponseRequest
from speech_to_speech.pipeline.messages.speech_output import AudioOutput
from speech_to_speech.pipeline.messages.transcription import TranscriptionCompleted
from speech_to_speech.stt.base import STTHandler
from speech_to_speech.testing.engine import (
    collect,
    collect_response,
    next_of,
    request,
    respond,
    scripted_builders,
    scripted_settings,
    stage,
    turn_audio,
)
from speech_to_speech.testing.scripted import EnergyVAD, ScriptedTTS
from speech_to_speech.units.unit import PipelineUnit


class BoomTTS(ScriptedTTS):
    """Fails on any clause that says 'boom'."""

    def synthesize(self, text: str, voice: str | None, language: str | None) -> Iterator[npt.NDArray[Any]]:
        if "boom" in text.lower():
            raise RuntimeError("synthesis exploded")
        yield from super().synthesize(text, voice, language)


class FlakyLLM(LLMHandler):
    """Streams a little, then crashes, on its first request only."""

    calls = 0

    def generate(self, request: GenerateResponseRequest) -> Iterator[GeneratedPart]:
        type(self).calls += 1
        yield "Starting "
        if type(self).calls == 1:
            raise RuntimeError("model exploded")
        yield "and finishing."


class FlakySTT(STTHandler):
    """Fails on its first utterance only."""

    calls = 0

    def transcribe(self, samples: Any, language: str | None) -> tuple[str, str | None]:
        type(self).calls += 1
        if type(self).calls == 1:
            raise RuntimeError("decoder exploded")
        return "second try works", "en"


class ResetFailsVAD(EnergyVAD):
    def reset_model_state(self) -> None:
        raise RuntimeError("reset exploded")


def started_unit(settings_overrides: dict[str, Any] | None = None, **stages: Any) -> PipelineUnit:
    settings = scripted_settings(**(settings_overrides or {}))
    unit = PipelineUnit(0, scripted_builders(settings, **{k: stage(v, settings) for k, v in stages.items()}))
    unit.start()
    return unit


def test_a_tts_crash_is_reported_and_the_next_clause_is_spoken() -> None:
    settings = scripted_settings(scripted_replies=["Boom goes the first clause. Then all is fine."])
    unit = PipelineUnit(0, scripted_builders(settings, tts=stage(BoomTTS, settings)))
    unit.start()
    try:
        record = respond(unit, "resp_boom")
        (error,) = record.of_type(StageError)
        assert error.stage == "tts"
        assert "synthesis exploded" in error.message
        assert (error.response_id, error.generation) == ("resp_boom", 0)
        after_error = record.items[record.items.index(error) :]
        assert any(isinstance(i, AudioOutput) for i in after_error)
        assert record.done.status == "completed"
        assert unit.healthy()
        assert unit.stages.tts.failures == 1
    finally:
        unit.stop()


def test_an_llm_crash_fails_the_response_and_the_next_one_works() -> None:
    FlakyLLM.calls = 0
    unit = started_unit(llm=FlakyLLM)
    try:
        failed = respond(unit, "resp_1")
        assert failed.done.status == "failed"
        assert failed.done.error is not None and "model exploded" in failed.done.error
        assert failed.text == "Starting "  # what was streamed before the crash still arrives in order
        assert unit.healthy()
        unit.submit(request(unit, "resp_2"))
        second = collect_response(unit, "resp_2")
        assert second.done.status == "completed"
        assert second.text == "Starting and finishing."
    finally:
        unit.stop()


def test_an_stt_crash_is_reported_and_the_turn_still_completes() -> None:
    FlakySTT.calls = 0
    # One transcription per turn: no speculative or interim pass before the turn's end.
    unit = started_unit({"speculation_silence_ms": 0, "interim_transcript_ms": 0}, stt=FlakySTT)
    try:
        unit.push_audio(turn_audio())
        items = collect(unit.queues.stage_events, TranscriptionCompleted)
        (error,) = [i for i in items if isinstance(i, StageError)]
        assert error.stage == "stt" and "decoder exploded" in error.message
        assert items[-1].transcript == ""
        unit.push_audio(turn_audio())
        assert next_of(unit.queues.stage_events, TranscriptionCompleted).transcript == "second try works"
    finally:
        unit.stop()


def test_a_failing_session_reset_still_forwards_the_session_end() -> None:
    unit = started_unit(vad=ResetFailsVAD)
    try:
        token = unit.begin_session_end()
        assert unit.wait_drained(token, timeout=5)
        assert unit.healthy()
    finally:
        unit.stop()


def test_handler_threads_survive_a_burst_of_failures() -> None:
    settings = scripted_settings(scripted_replies=["Boom. Boom. Boom. Boom."])
    unit = PipelineUnit(0, scripted_builders(settings, tts=stage(BoomTTS, settings)))
    unit.start()
    try:
        for n in range(3):
            record = respond(unit, f"resp_{n}")
            assert len(record.of_type(StageError)) == 4
        assert unit.stages.tts.failures == 12
        assert unit.healthy()
    finally:
        unit.stop()


def test_a_crash_on_a_speculative_pass_leaves_the_final_transcription_to_do_the_work() -> None:
    FlakySTT.calls = 0
    unit = started_unit(stt=FlakySTT)
    try:
        # The pause first: the speculative pass runs (and fails) before the turn ends.
        unit.push_audio(turn_audio(silence_s=0.2))
        items = collect(unit.queues.stage_events, StageError)
        assert items[-1].stage == "stt" and items[-1].retried
        unit.push_audio(turn_audio(speech_s=0, silence_s=1.0))
        items = collect(unit.queues.stage_events, TranscriptionCompleted)
        assert not [i for i in items if isinstance(i, StageError)]
        # The speculative pass failed, so the turn's end transcribes again, successfully.
        assert items[-1].transcript == "second try works"
    finally:
        unit.stop()
