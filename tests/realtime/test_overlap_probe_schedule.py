"""When the judge of speech over the answer asks the STT for its words again (OverlapJudge's probes)."""

from __future__ import annotations

from speech_to_speech.pipeline.messages.input_audio import SpeechStarted
from speech_to_speech.pipeline.messages.transcription import TranscriptionSnapshot
from speech_to_speech.pipeline.messages.turn_taking import ProbeSpeech
from speech_to_speech.protocol.overlap_decisions import BARGE_IN
from speech_to_speech.realtime.conversation.overlap_judge import (
    FIRST_STEP_MS,
    PROBE_STEP_MS,
    OverlapJudge,
)
from speech_to_speech.testing.overlap_gate import RecordingGate


def _judge() -> tuple[RecordingGate, list[ProbeSpeech], OverlapJudge]:
    gate, probes = RecordingGate(), list[ProbeSpeech]()
    judge = OverlapJudge(gate, cap_ms=lambda: 1200, probe=probes.append, pause_words=lambda words: None)
    return gate, probes, judge


def test_the_second_probe_comes_sooner_than_the_ones_after_it() -> None:
    """Said "Okay, stop": the first pass hears "Okay" (a listener's word), the next "Okay," and the third the stop."""
    gate, probes, judge = _judge()
    judge.take(SpeechStarted(0, item_id="item_2", speech_ms=250))
    assert probes == [ProbeSpeech("item_2")]  # at once: the speech so far
    judge.take(TranscriptionSnapshot("item_2", "Okay", -0.2))
    judge.take(TranscriptionSnapshot("item_2", "Okay,", -0.2))
    assert [probe.min_new_ms for probe in probes[1:]] == [FIRST_STEP_MS, PROBE_STEP_MS]
    assert FIRST_STEP_MS < PROBE_STEP_MS
    passed = judge.take(TranscriptionSnapshot("item_2", "Okay, stop.", -0.2))
    assert [d.action for d in gate.decisions] == [BARGE_IN] and len(passed) == 4  # held items go on
    assert len(probes) == 3  # decided: no probe more
