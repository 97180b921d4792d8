"""The linear canceller finds the echo's delay, learns its path, and leaves a talker's samples as they were."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.linear_echo import LinearEcho
from speech_to_speech.audio.rates import PIPELINE_RATE
from speech_to_speech.audio.wav import read_wav
from speech_to_speech.testing.room import Room

FIXTURES = Path(__file__).parents[1] / "fixtures" / "turns"
FRAME = PIPELINE_RATE // 100


def _speech(*names: str) -> np.ndarray:
    return np.concatenate([read_wav(FIXTURES / f"{name}.wav", PIPELINE_RATE)[0] for name in names])


def _db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(samples.astype(np.float64) ** 2) + 1e-15))


def _cancel(linear: LinearEcho, played: np.ndarray, mic: np.ndarray, learn_until: int) -> np.ndarray:
    out = []
    for start in range(0, len(mic) - FRAME + 1, FRAME):
        out.append(linear.process(played[start:start + FRAME], mic[start:start + FRAME]))
        if start < learn_until:
            linear.learn()
    return np.concatenate(out)


@pytest.mark.parametrize("delay_ms", [40, 150, 320])
def test_the_echo_path_is_found_and_learnt_within_the_first_seconds(delay_ms: int) -> None:
    room = Room(delay_ms=delay_ms)
    played = _speech("whole_robot_story", "continuation_rome")
    mic = room.echo_of(played) + room.noise(len(played))
    linear = LinearEcho(FRAME, PIPELINE_RATE)
    out = _cancel(linear, played, mic, learn_until=len(mic))
    assert linear.ready
    second = slice(PIPELINE_RATE, 3 * PIPELINE_RATE)  # the second and third seconds of the answer
    removed = _db(mic[second]) - _db(out[second])
    assert removed > 15.0, f"{removed:.1f} dB of echo removed"


def test_a_talker_passes_sample_for_sample_with_only_the_echo_taken_away() -> None:
    room = Room(delay_ms=150)
    played = _speech("whole_robot_story", "continuation_rome", "cut_black_holes_and")
    words = _speech("unfinished_rome_uh") * 0.5
    start = len(played) - len(words) - PIPELINE_RATE // 2
    user = np.zeros_like(played)
    user[start:start + len(words)] = words
    echo = room.echo_of(played)
    mic = echo + user + room.noise(len(played))
    out = _cancel(LinearEcho(FRAME, PIPELINE_RATE), played, mic, learn_until=start)  # frozen while they talk
    span = slice(start, start + len(words))
    assert abs(_db(out[span]) - _db(user[span])) < 1.0
    left = _db(out[span] - user[span])  # what is left of the echo over the talker
    assert _db(echo[span]) - left > 15.0
    assert float(np.corrcoef(out[span], user[span])[0, 1]) > 0.95  # the same samples: no suppression, no phase
