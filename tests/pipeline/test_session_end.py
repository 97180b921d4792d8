"""Session end: a soft reset that travels the whole unit and proves it drained."""

from __future__ import annotations

from speech_to_speech.pipeline.messages.control import SessionEnd
from speech_to_speech.pipeline.messages.generation import ResponseDone, TokenUsage
from speech_to_speech.pipeline.messages.input_audio import SpeechStarted, SpeechStopped
from speech_to_speech.pipeline.messages.speech_output import AudioOutput
from speech_to_speech.testing.engine import (
    UnitFactory,
    collect,
    drain,
    next_of,
    request,
    respond,
    silence,
    speech,
    turn_audio,
)

LONG_REPLY = " ".join(f"Clause {n} goes on, and on." for n in range(30))


def test_an_idle_unit_drains(make_unit: UnitFactory) -> None:
    unit = make_unit()
    token = unit.begin_session_end()
    assert unit.wait_drained(token, timeout=5)


def test_session_end_stops_a_response_mid_stream_and_drains(make_unit: UnitFactory) -> None:
    unit = make_unit(scripted_replies=[LONG_REPLY, "Next session."], scripted_token_delay_ms=20)
    unit.submit(request(unit, "resp_old"))
    next_of(unit.queues.response_output, AudioOutput)
    before = unit.cancel_scope.generation
    token = unit.begin_session_end()
    assert unit.cancel_scope.generation > before
    assert unit.wait_drained(token, timeout=5)
    # Nothing of the old session follows the sentinel except lifecycle items.
    leftovers = drain(unit.queues.response_output)
    assert all(isinstance(i, (ResponseDone, TokenUsage)) for i in leftovers)
    record = respond(unit, "resp_new")
    assert record.text == "Next session."
    assert {i.generation for i in record.items if hasattr(i, "generation")} == {unit.cancel_scope.generation}


def test_session_end_forgets_a_turn_in_progress(make_unit: UnitFactory) -> None:
    unit = make_unit()
    unit.push_audio(speech(0.6))
    next_of(unit.queues.stage_events, SpeechStarted)
    assert unit.wait_drained(unit.begin_session_end(), timeout=5)
    # Had the VAD kept the old turn, this silence would end it with a SpeechStopped.
    unit.push_audio(silence(1.0))
    unit.push_audio(turn_audio())
    events = collect(unit.queues.stage_events, lambda i: isinstance(i, (SpeechStarted, SpeechStopped)))
    assert isinstance(events[-1], SpeechStarted)
    # The input timeline restarts with the session: speech began 1 s in, less the prefix pad.
    assert 600 <= events[-1].audio_start_ms <= 1000


def test_wait_drained_waits_for_its_own_token(make_unit: UnitFactory) -> None:
    unit = make_unit()
    first = unit.begin_session_end()
    second = unit.begin_session_end()
    assert second != first
    assert unit.wait_drained(second, timeout=5)
    assert drain(unit.queues.stage_events) == []
    assert drain(unit.queues.response_output) == []


def test_session_end_reaches_both_ends_of_the_unit(make_unit: UnitFactory) -> None:
    unit = make_unit()
    token = unit.begin_session_end()
    assert next_of(unit.queues.stage_events, SessionEnd) == SessionEnd(token)
    assert next_of(unit.queues.response_output, SessionEnd) == SessionEnd(token)
