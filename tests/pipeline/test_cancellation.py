"""Cancellation at the engine level: stale output, barge-in, new responses."""

from __future__ import annotations

import numpy as np

from speech_to_speech.pipeline.messages.generation import LLMFirstToken, ResponseDone, TokenUsage
from speech_to_speech.pipeline.messages.input_audio import SpeechStarted
from speech_to_speech.pipeline.messages.speech_output import AudioOutput, TranscriptText
from speech_to_speech.pipeline.messages.transcription import TranscriptionCompleted
from speech_to_speech.testing.engine import (
    UnitFactory,
    assert_quiet,
    collect,
    collect_response,
    drain,
    next_of,
    request,
    respond,
    speech,
    turn_audio,
)

LONG_REPLY = " ".join(f"Sentence number {n} is here, and it keeps going." for n in range(12))
# Old-generation items that still reach the send loop after a cancel.
LIFECYCLE = (ResponseDone, TokenUsage)


def content_of_generation(items: list[object], generation: int) -> list[object]:
    return [i for i in items if getattr(i, "generation", None) == generation and not isinstance(i, LIFECYCLE)]


def test_stale_output_is_dropped_after_a_mid_stream_cancel(make_unit: UnitFactory) -> None:
    unit = make_unit(scripted_replies=[LONG_REPLY], scripted_token_delay_ms=20)
    unit.submit(request(unit, "resp_a"))
    next_of(unit.queues.response_output, AudioOutput)  # the response is speaking
    unit.cancel_scope.cancel()
    drain(unit.queues.response_output)  # what the send loop flushes at cancel
    after = collect_response(unit, "resp_a")
    assert content_of_generation(after.items, 0) == []
    assert after.done.generation == 0
    assert after.done.status == "cancelled"


def test_barge_in_before_the_first_token_closes_the_response_without_content(make_unit: UnitFactory) -> None:
    unit = make_unit(scripted_token_delay_ms=300)
    unit.submit(request(unit, "resp_a"))
    unit.cancel_scope.cancel()
    record = collect_response(unit, "resp_a")
    assert record.items == [record.done]
    assert record.done.generation == 0
    assert record.done.status == "cancelled"


def test_a_request_that_is_stale_when_dequeued_still_closes_its_response(make_unit: UnitFactory) -> None:
    unit = make_unit()
    stale = request(unit, "resp_stale")
    unit.cancel_scope.cancel()
    unit.submit(stale)
    record = collect_response(unit, "resp_stale")
    assert [type(i) for i in record.items] == [ResponseDone]
    assert (record.done.generation, record.done.status) == (0, "cancelled")


def test_a_new_response_after_cancel_carries_only_the_new_generation(make_unit: UnitFactory) -> None:
    unit = make_unit(scripted_replies=[LONG_REPLY, "Fresh answer, all new."], scripted_token_delay_ms=10)
    unit.submit(request(unit, "resp_old"))
    next_of(unit.queues.response_output, AudioOutput)
    new_generation = unit.cancel_scope.cancel()
    drain(unit.queues.response_output)
    unit.submit(request(unit, "resp_new"))
    items = collect(
        unit.queues.response_output, lambda i: isinstance(i, ResponseDone) and i.response_id == "resp_new"
    )
    old_done = [i for i in items if isinstance(i, ResponseDone) and i.response_id == "resp_old"]
    assert len(old_done) == 1 and old_done[0].generation == 0
    assert content_of_generation(items, 0) == []
    new_items = items[items.index(old_done[0]) + 1 :]
    assert {getattr(i, "generation", None) for i in new_items} == {new_generation}
    assert "".join(i.text for i in new_items if isinstance(i, TranscriptText)) == "Fresh answer, all new."
    assert any(isinstance(i, AudioOutput) for i in new_items)
    assert new_items[-1].status == "completed"


def test_cancel_with_nothing_active_is_a_no_op_for_the_next_response(make_unit: UnitFactory) -> None:
    unit = make_unit()
    unit.cancel_scope.cancel()
    assert_quiet(unit.queues.response_output, 0.2)
    assert_quiet(unit.queues.stage_events, 0.0)
    record = respond(unit, "resp_after")
    assert record.done.status == "completed"
    assert record.text == "Paris is the capital of France."
    assert len(record.audio) > 0
    assert {i.generation for i in record.items if hasattr(i, "generation")} == {1}


def test_barge_in_mid_audio_hands_the_turn_to_the_new_utterance(make_unit: UnitFactory) -> None:
    unit = make_unit(
        scripted_transcripts=["Tell me a story.", "Stop, tell me the time."],
        scripted_replies=[LONG_REPLY, "It is noon."],
        scripted_token_delay_ms=20,
    )
    unit.push_audio(turn_audio())
    first = next_of(unit.queues.stage_events, TranscriptionCompleted)
    assert first.transcript == "Tell me a story."
    unit.submit(request(unit, "resp_story", first.transcript))
    next_of(unit.queues.response_output, AudioOutput)

    # The user speaks over the answer; the VAD reports it, the send loop cancels.
    unit.push_audio(speech(0.6))
    started = next_of(unit.queues.stage_events, SpeechStarted)
    assert started.interrupt_response
    unit.cancel_scope.cancel()
    drain(unit.queues.response_output)
    unit.push_audio(np.zeros(16000, dtype=np.float32))
    second = next_of(unit.queues.stage_events, TranscriptionCompleted)
    assert second.transcript == "Stop, tell me the time."

    unit.submit(request(unit, "resp_time", second.transcript))
    items = collect(
        unit.queues.response_output, lambda i: isinstance(i, ResponseDone) and i.response_id == "resp_time"
    )
    assert content_of_generation(items, 0) == []
    story_done = next(i for i in items if isinstance(i, ResponseDone) and i.response_id == "resp_story")
    assert story_done.status == "cancelled"
    spoken = "".join(i.text for i in items if isinstance(i, TranscriptText))
    assert spoken == "It is noon."
    assert not any(isinstance(i, LLMFirstToken) and i.generation == 0 for i in items)
