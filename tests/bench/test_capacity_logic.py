"""Capacity arithmetic: added latency, the budget rule, when a listener's playback ends; the overhead clip."""

from __future__ import annotations

import pytest

from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.bench.capacity import ADDED, LATENCY, add_added_latency, capacity, playback_end, talkers
from speech_to_speech.bench.overhead import OverheadConfig, turn_clip


def level(p95: float | None, errors: int = 0) -> dict:
    return {ADDED: {"p95": p95}, "errors": errors}


def test_capacity_is_the_largest_n_before_the_first_level_over_budget() -> None:
    assert capacity({1: level(0.0), 2: level(10.0), 4: level(49.9), 8: level(50.0), 16: level(20.0)}, 50.0) == 4
    assert capacity({1: level(60.0)}, 50.0) == 0
    assert capacity({1: level(0.0), 2: level(5.0, errors=1)}, 50.0) == 1  # a failed session fails the level
    assert capacity({1: level(0.0), 2: level(None)}, 50.0) == 1


def talking(p50: float | None, answered: int = 2, errors: int = 0, underruns: int = 0) -> dict:
    return {LATENCY: {"p50": p50, "n": answered}, "errors": errors, "turns": 2, "underruns": {"max": underruns}}


def test_talkers_is_the_largest_n_served_within_the_ratio_of_one_session() -> None:
    assert talkers({1: talking(600.0), 2: talking(1500.0), 4: talking(1501.0)}, 2.5) == 2
    assert talkers({1: talking(600.0), 2: talking(900.0), 4: talking(700.0, answered=1)}, 2.5) == 2  # one unanswered
    assert talkers({1: talking(600.0), 2: talking(900.0, underruns=1), 4: talking(700.0)}, 2.5) == 1
    assert talkers({1: talking(600.0), 2: talking(900.0, errors=1)}, 2.5) == 1
    assert talkers({1: talking(None, answered=0)}, 2.5) == 0


def test_added_latency_is_against_the_baseline() -> None:
    samples = [{"end_of_speech_to_first_audio_ms": 620.0}, {"error": "TimeoutError"}]
    add_added_latency(samples, 600.0)
    assert samples[0][ADDED] == 20.0 and ADDED not in samples[1]


def test_playback_ends_after_all_audio_and_every_underrun() -> None:
    assert playback_end([]) is None
    assert playback_end([(10.0, 1.0), (10.5, 1.0)]) == pytest.approx(12.0)
    assert playback_end([(10.0, 0.5), (11.0, 0.5)]) == pytest.approx(11.5)  # 0.5 s dry, then 0.5 s more


def test_the_overhead_clip_is_whole_vad_chunks_and_its_decisive_sample_completes_min_speech() -> None:
    clip, decisive = turn_clip(OverheadConfig(min_speech_ms=250, speech_ms=320, lead_ms=128))
    chunk = PIPELINE_RATE * 32 // 1000
    assert clip.rate == PIPELINE_RATE and clip.start % chunk == 0 and len(clip.samples) % chunk == 0
    assert decisive == clip.start + 8 * chunk - 1  # 8 voiced 32 ms chunks make 256 >= 250 ms
    assert turn_clip(OverheadConfig(min_speech_ms=0))[1] == clip.start + chunk - 1
    with pytest.raises(ValueError, match="shorter"):
        turn_clip(OverheadConfig(min_speech_ms=500, speech_ms=320))
