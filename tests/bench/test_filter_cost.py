"""bench room's filters part: each filter sees the whole microphone in 20 ms chunks, with the speaker's output."""

from __future__ import annotations

import numpy as np

from speech_to_speech.audio.denoise import WeightsMissing
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.bench.filter_cost import CHUNK_MS, ECHO_DELAY_MS, ECHO_GAIN, Filter, cost_of, filter_costs


def test_each_filter_sees_every_chunk_of_the_microphone_with_what_played_meanwhile() -> None:
    seen: list[tuple[np.ndarray, np.ndarray]] = []

    def recorder() -> Filter:
        def run(microphone: np.ndarray, played: np.ndarray) -> np.ndarray:
            seen.append((microphone.copy(), played.copy()))
            return microphone
        return run

    rng = np.random.default_rng(3)
    talk = (0.01 * rng.standard_normal(PIPELINE_RATE)).astype(np.float32)
    answer = (0.1 * rng.standard_normal(PIPELINE_RATE)).astype(np.float32)
    result = filter_costs(talk, answer, {"recorder": recorder})["recorder"]
    step = PIPELINE_RATE * CHUNK_MS // 1000
    assert len(seen) == PIPELINE_RATE // step and all(len(m) == len(p) == step for m, p in seen)
    microphone = np.concatenate([m for m, _ in seen])
    played = np.concatenate([p for _, p in seen])
    assert np.array_equal(played, answer)
    lag = PIPELINE_RATE * ECHO_DELAY_MS // 1000
    assert np.allclose(microphone[lag:], talk[lag:] + ECHO_GAIN * answer[:-lag], atol=1e-6)  # the echo, late
    assert result["audio_s"] == 1.0 and result["cpu_ms_per_audio_s"] >= 0.0


def test_a_filter_whose_weights_are_missing_is_reported_not_measured() -> None:
    def missing() -> Filter:
        raise WeightsMissing("pip install --no-deps some-weights")

    silence = np.zeros(PIPELINE_RATE, np.float32)
    assert cost_of(missing, silence, silence) == {"missing": "pip install --no-deps some-weights"}
