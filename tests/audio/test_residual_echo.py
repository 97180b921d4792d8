"""The residual echo suppressor: echo that AEC3 let through is turned down; a user talking over it is not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speech_to_speech.audio.residual_echo import ResidualEchoSuppressor, level_db

FRAME = 160  # 10 ms at 16 kHz


def _voice(frames: int, seed: int) -> list[np.ndarray]:
    """Speech-like frames: noise under a syllable envelope (loud and quiet stretches of 50-200 ms)."""
    rng = np.random.default_rng(seed)
    envelope = np.repeat(rng.uniform(0.005, 0.3, frames // 5 + 1), 5)[:frames]
    return [(rng.standard_normal(FRAME) * level).astype(np.float32) for level in envelope]


def _echo_of(reference: list[np.ndarray], lag: int, gain: float) -> list[np.ndarray]:
    silent = [np.zeros(FRAME, np.float32)] * lag
    return [frame * gain for frame in (silent + reference)[:len(reference)]]


def _learnt(lag: int, gain: float, seed: int = 0) -> tuple[ResidualEchoSuppressor, list[np.ndarray]]:
    """A suppressor that heard 3 s of an answer's echo that AEC3 cancelled (40 dB off)."""
    suppressor = ResidualEchoSuppressor()
    reference = _voice(400, seed)
    echo = _echo_of(reference, lag, gain)
    for played, heard in zip(reference[:300], echo[:300], strict=True):
        suppressor.process(played, heard, heard * 0.01)
    return suppressor, reference[300:]


@pytest.mark.parametrize("lag", [6, 15, 25])
def test_it_finds_where_the_echo_comes_and_turns_a_leak_down(lag: int) -> None:
    suppressor, later = _learnt(lag, gain=0.5)
    assert suppressor.lag is not None and lag - 8 <= suppressor.lag <= lag  # the room's tail is within reach
    echo = _echo_of(_voice(400, 0), lag, 0.5)[300:]
    leaked = [suppressor.process(played, heard, heard) for played, heard in zip(later, echo, strict=True)]
    loud = [index for index, frame in enumerate(echo) if level_db(frame) > -40]
    assert loud
    assert all(level_db(leaked[index]) < level_db(echo[index]) - 10 for index in loud)


def test_a_user_louder_than_the_echo_passes_as_aec3_left_them() -> None:
    suppressor, later = _learnt(10, gain=0.5)
    echo = _echo_of(_voice(400, 0), 10, 0.5)[300:]
    rng = np.random.default_rng(7)
    for played, heard in zip(later, echo, strict=True):
        talk = (rng.standard_normal(FRAME) * 0.3).astype(np.float32)  # 6 dB over the loudest echo
        left = talk + heard * 0.3  # AEC3 takes little off while someone talks over the echo
        assert np.array_equal(suppressor.process(played, heard + talk, left), left)


def test_before_it_has_heard_an_echo_it_changes_nothing() -> None:
    suppressor = ResidualEchoSuppressor()
    for frame in _voice(200, 3):
        assert np.array_equal(suppressor.process(frame, frame, frame), frame)
    assert suppressor.lag is None


@settings(max_examples=25, deadline=None)
@given(lag=st.integers(0, 40), gain=st.floats(0.05, 1.0), seed=st.integers(0, 1000))
def test_it_only_ever_turns_the_output_down(lag: int, gain: float, seed: int) -> None:
    suppressor, later = _learnt(lag, gain, seed)
    rng = np.random.default_rng(seed)
    for played in later[:50]:
        microphone = played * gain + rng.standard_normal(FRAME).astype(np.float32) * rng.uniform(0, 0.2)
        output = microphone * rng.uniform(0, 1)
        result = suppressor.process(played, microphone, output)
        assert result.shape == output.shape and level_db(result) <= level_db(output) + 1e-6
