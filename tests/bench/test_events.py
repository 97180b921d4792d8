"""Timing extraction from event logs: turns, stage hops, audio durations, underruns, stale audio."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from speech_to_speech.bench.events import (
    FIRST_SOUND,
    Clock,
    audio_after,
    audio_deltas,
    audio_ms,
    hops,
    latency_sample,
    stage_marks,
    turn,
    underruns,
)
from speech_to_speech.testing.realtime_client import Received

CLOCK = Clock(offset_s=1_000_000.0)  # monotonic 0.0 s is epoch 1e9 ms


def epoch(monotonic_s: float) -> float:
    return CLOCK.epoch_ms(monotonic_s)


def delta(rid: str, ms: float, sound_from_ms: float | None = None) -> dict:
    samples = np.zeros(int(24000 * ms / 1000), dtype="<i2")
    if sound_from_ms is not None:
        samples[int(24000 * sound_from_ms / 1000):] = 2000
    pcm = samples.tobytes()
    return {"type": "response.output_audio.delta", "response_id": rid, "delta": base64.b64encode(pcm).decode()}


def done(rid: str, status: str = "completed", marks: dict[str, float] | None = None) -> dict:
    metadata = {"s2s_timings": json.dumps(marks)} if marks else None
    return {"type": "response.done", "response": {"id": rid, "status": status, "metadata": metadata}}


def test_the_clock_maps_monotonic_seconds_to_epoch_ms() -> None:
    assert CLOCK.epoch_ms(1.5) == pytest.approx(1_000_001_500.0)
    now = Clock.now()
    assert now.epoch_ms(0.0) > 1.6e12  # after 2020


def test_audio_duration_is_the_decoded_pcm_not_the_base64_text() -> None:
    assert audio_ms(delta("r", 100)) == pytest.approx(100.0)
    assert audio_ms({"type": "response.output_audio.delta", "delta": ""}) == 0.0


def test_stage_marks_come_from_the_timings_metadata() -> None:
    assert stage_marks(done("r", marks={"stt_done": 5.0})) == {"stt_done": 5.0}
    assert stage_marks(done("r")) == {}


def test_hops_need_both_of_their_marks() -> None:
    marks = {"end_of_speech": 0.0, "vad_end_of_speech": 500.0, "stt_done": 700.0, "first_audio_sent": 900.0}
    assert hops(marks) == {"vad_ms": 500.0, "stt_ms": 200.0}


def test_a_turn_is_timed_from_the_end_of_speech_to_its_first_audio_delta() -> None:
    server = {"vad_end_of_speech": epoch(10.5), "stt_done": epoch(10.7), "llm_first_token": epoch(10.9),
              "tts_first_audio": epoch(11.0), "first_audio_sent": epoch(11.01)}
    log = [
        Received({"type": "input_audio_buffer.speech_stopped"}, 10.49),
        Received({"type": "conversation.item.input_audio_transcription.completed", "transcript": "hi"}, 10.71),
        Received(delta("old", 20), 10.8),  # another response's audio does not count
        Received(delta("r1", 20), 11.02),
        Received(delta("r1", 20), 11.03),
        Received({"type": "response.output_audio_transcript.done", "response_id": "r1", "transcript": "Hello."},
                 11.04),
        Received(done("r1", marks=server), 11.05),
    ]
    entry = turn(log, "r1")
    assert (entry.status, entry.heard, entry.transcript) == ("completed", "hi", "Hello.")
    assert entry.first_audio is log[3]
    sample = latency_sample(entry, end_of_speech=10.0, clock=CLOCK)
    assert sample["end_of_speech_to_first_audio_ms"] == pytest.approx(1020.0)
    expected = {"vad_ms": 500.0, "stt_ms": 200.0, "llm_first_token_ms": 200.0, "tts_first_audio_ms": 100.0,
                "send_ms": 10.0, "wire_ms": 10.0}
    assert {name: sample[name] for name in expected} == pytest.approx(expected, abs=0.01)
    # The hops add up to the whole.
    assert sum(sample[name] for name in expected) == pytest.approx(sample["end_of_speech_to_first_audio_ms"])


def test_a_turn_without_audio_or_timings_has_only_what_it_shows() -> None:
    log = [Received(done("r1", status="cancelled"), 3.0)]
    sample = latency_sample(turn(log, "r1"), end_of_speech=1.0, clock=CLOCK)
    assert sample == {"response_id": "r1", "status": "cancelled"}


def test_a_turn_needs_its_response_done() -> None:
    with pytest.raises(ValueError, match=r"no response\.done"):
        turn([Received(delta("r1", 20), 1.0)], "r1")


def test_audio_read_after_the_cancellation_is_stale() -> None:
    log = [Received(delta("r1", 40), 1.0), Received(done("r1", "cancelled"), 1.1),
           Received(delta("r1", 60), 1.2), Received(delta("r2", 80), 1.3)]
    assert audio_after(log, "r1", after=1.1) == pytest.approx(60.0)
    assert audio_after(log, "r2", after=1.1) == pytest.approx(80.0)
    assert audio_deltas(log, "r1") == [(1.0, pytest.approx(0.04)), (1.2, pytest.approx(0.06))]


def test_no_underrun_while_audio_arrives_ahead_of_playback() -> None:
    assert underruns([(0.0, 1.0), (0.5, 1.0), (1.9, 0.5)]) == underruns([])
    assert underruns([]).count == 0


def test_a_late_delta_is_an_underrun_of_the_gap_and_playback_resumes_from_it() -> None:
    # 0.0: 0.2 s plays until 0.2; 0.5 arrives late (0.3 s gap) and plays until 0.7; 0.6 queues until 0.8;
    # 1.0 arrives 0.2 s after the queue ran dry.
    result = underruns([(0.0, 0.2), (0.5, 0.2), (0.6, 0.1), (1.0, 0.1)])
    assert result.count == 2
    assert result.total_ms == pytest.approx(500.0)
    assert result.max_ms == pytest.approx(300.0)


def test_silence_before_the_first_sound_is_latency_too() -> None:
    """A client playing deltas as they come hears the reply start after the silence sent first."""
    log = [
        Received(delta("r1", 20), 2.0),  # all silence
        Received(delta("other", 20, sound_from_ms=0), 2.01),  # another response's sound does not count
        Received(delta("r1", 20, sound_from_ms=5), 2.02),
        Received(done("r1"), 2.1),
    ]
    entry = turn(log, "r1")
    assert entry.lead_silence_ms == pytest.approx(25.0)
    sample = latency_sample(entry, end_of_speech=1.5, clock=CLOCK)
    assert sample["end_of_speech_to_first_audio_ms"] == pytest.approx(500.0)
    assert sample[FIRST_SOUND] == pytest.approx(525.0)


def test_a_reply_of_silence_has_no_first_sound() -> None:
    log = [Received(delta("r1", 40), 2.0), Received(done("r1"), 2.1)]
    entry = turn(log, "r1")
    assert entry.lead_silence_ms is None
    assert FIRST_SOUND not in latency_sample(entry, end_of_speech=1.5, clock=CLOCK)
