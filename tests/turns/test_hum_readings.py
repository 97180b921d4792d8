"""A hum the STT spelled as words: judged by how nearly as likely it found a hum (the hum gap)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.pipeline.messages.input_audio import SpeechStarted, SpeechStopped
from speech_to_speech.pipeline.messages.transcription import TranscriptionCompleted, TranscriptionSnapshot
from speech_to_speech.protocol.overlap_decisions import ACKNOWLEDGE, BARGE_IN
from speech_to_speech.realtime.conversation.overlap import Overlap
from speech_to_speech.realtime.conversation.overlap_judge import Judged, OverlapJudge
from speech_to_speech.testing.overlap_gate import RecordingGate
from speech_to_speech.turns.listener_words import (
    HUM_GAP,
    HUM_MAX_WORDS,
    Heard,
    heard_as,
    heard_so_far,
    hummed,
)

# What tiny.en wrote for hummed listener sounds (bench room, hibari's voices), each a bid by its words alone.
HUMS_MISREAD = ["Let's...", "No.", "Hello?", "No, no, no."]
SHORT_BIDS = ["Stop.", "Wait.", "No.", "Hold on.", "What?", "Pause."]


@pytest.mark.parametrize("text", HUMS_MISREAD)
def test_words_a_hum_was_nearly_as_likely_as_are_a_listener_s(text: str) -> None:
    assert heard_as(text, -0.6, (), None) is Heard.TURN  # the words alone take the turn
    assert heard_as(text, -0.6, (), HUM_GAP - 0.5) is Heard.LISTENER
    assert heard_so_far(text, -0.6, (), HUM_GAP - 0.5) is Heard.LISTENER


@pytest.mark.parametrize("text", SHORT_BIDS)
def test_sure_words_that_leave_every_hum_behind_still_take_the_turn(text: str) -> None:
    assert heard_as(text, -0.3, (), HUM_GAP + 5.0) is Heard.TURN
    assert heard_so_far(text, -0.3, (), HUM_GAP + 5.0) is Heard.TURN


def test_more_words_than_a_hum_is_misread_as_are_judged_by_their_words_unless_a_hum_was_likelier() -> None:
    text = "Wait, what was that about the bees?"
    assert not hummed(text, HUM_GAP - 1.0)
    assert heard_as(text, -0.8, (), HUM_GAP - 1.0) is Heard.TURN
    # tiny.en made "I'm not going to do that." of a quarter second of a quiet "Mm.", and found "Mm." likelier
    assert heard_so_far("I'm not going to do that.", -0.9, (), -8.5) is Heard.LISTENER


@settings(max_examples=300)
@given(st.sampled_from(HUMS_MISREAD + SHORT_BIDS + ["Okay.", "Yeah, yeah.", "Huh."]),
       st.floats(-2.0, 0.0), st.one_of(st.none(), st.floats(-20.0, 25.0)))
def test_a_hum_gap_only_ever_makes_a_few_words_a_listener_s(text: str, logprob: float, gap: float | None) -> None:
    """The gap never makes anything a bid, and it touches only words a hum was likelier than, or one or two
    words (once each) within HUM_GAP of a hum."""
    without = heard_as(text, logprob, ())
    with_gap = heard_as(text, logprob, (), gap)
    few = len(set(text.lower().replace(",", "").replace(".", "").replace("?", "").split())) <= HUM_MAX_WORDS
    if gap is not None and (gap <= 0.0 or (gap <= HUM_GAP and few)):
        assert with_gap is Heard.LISTENER
    else:
        assert with_gap is without


def _judged() -> Judged:
    return Judged(Overlap("item_1", "resp_1"), cap_ms=1200)


def test_a_hum_read_as_no_is_acknowledged_and_a_sure_no_barges_in() -> None:
    hum = _judged()
    assert hum.hear("No.", -0.6, hum_gap=1.5) is None  # a probe: the utterance's end decides
    hum.voiced(420, stopped=True)
    verdict = hum.hear("No.", -0.6, final=True, hum_gap=2.0)
    assert verdict is not None and verdict.action == ACKNOWLEDGE
    no = _judged()
    verdict = no.hear("No.", -0.25, hum_gap=16.0)
    assert verdict is not None and verdict.action == BARGE_IN


def _over_the_answer(hum_gap: float | None) -> tuple[RecordingGate, list[object]]:
    """A pipeline's items for speech over the answer heard as "No." (its probe and its end), through the judge."""
    gate = RecordingGate()
    judge_ = OverlapJudge(gate, cap_ms=lambda: 1200, probe=lambda probe: None, pause_words=lambda words: None)
    items = [SpeechStarted(0, item_id="item_2", speech_ms=250),
             TranscriptionSnapshot("item_2", "No.", -0.6, (), hum_gap),
             SpeechStopped(420, "item_2", speech_ms=420),
             TranscriptionCompleted("item_2", "No.", avg_logprob=-0.6, hum_gap=hum_gap)]
    return gate, [out for item in items for out in judge_.take(item)]


def test_the_judge_weighs_the_hum_gap_its_pipeline_items_carry(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="speech_to_speech.realtime.conversation.overlap_judge"):
        gate, passed = _over_the_answer(1.5)
    passes = [r.getMessage() for r in caplog.records if "speech over the answer" in r.getMessage()]
    assert len(passes) == 2 and "hum gap 1.5" in passes[0] and "heard as listener" in passes[-1]
    assert passed == [] and [d.action for d in gate.decisions] == [ACKNOWLEDGE]  # nothing reaches the client
    gate, passed = _over_the_answer(None)
    assert [d.action for d in gate.decisions] == [BARGE_IN]
    assert isinstance(passed[0], SpeechStarted) and isinstance(passed[-1], TranscriptionCompleted)

