"""Visemes heard in audio: synthetic vowels with known formants get their shape; quiet and hiss theirs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, lfilter

from speech_to_speech.visemes.acoustic import AcousticVisemes, formants

RATE = 24000


def vowel(f1: float, f2: float, seconds: float = 0.3, pitch: float = 120.0) -> np.ndarray:
    """A voiced pulse train through resonators at F1, F2 and a fixed F3: int16 speech-like audio."""
    source = np.zeros(int(seconds * RATE))
    source[:: int(RATE / pitch)] = 1.0
    audio = source
    for frequency, bandwidth in ((f1, 80.0), (f2, 100.0), (2800.0, 150.0)):
        radius = np.exp(-np.pi * bandwidth / RATE)
        theta = 2 * np.pi * frequency / RATE
        audio = lfilter([1.0], [1.0, -2 * radius * np.cos(theta), radius * radius], audio)
    return (audio / np.abs(audio).max() * 12000).astype(np.int16)


def shapes(samples: np.ndarray) -> list[str]:
    return [segment.viseme for segment in AcousticVisemes(RATE).segments(samples)]


@pytest.mark.parametrize(("f1", "f2", "expected"), [
    (750, 1250, "aa"),  # father
    (300, 2300, "ih"),  # see
    (550, 1800, "E"),  # bed
    (550, 900, "oh"),  # law
    (320, 800, "ou"),  # food
])
def test_a_vowel_gets_the_shape_of_its_formants(f1: float, f2: float, expected: str) -> None:
    found = formants(vowel(f1, f2)[2400:2880].astype(np.float64) / 32768, RATE)
    assert found is not None and abs(found[0] - f1) < 120 and abs(found[1] - f2) < 200
    assert shapes(vowel(f1, f2)) == [expected]


def test_silence_and_hiss() -> None:
    assert shapes(np.zeros(RATE // 5, np.int16)) == ["sil"]
    noise = np.random.default_rng(0).standard_normal(RATE // 5)
    b, a = butter(4, 4500 / (RATE / 2), "high")
    assert shapes((lfilter(b, a, noise) * 6000).astype(np.int16)) == ["SS"]


def test_a_quiet_stretch_after_loud_speech_reads_as_closed_lips() -> None:
    loud = vowel(750, 1250)
    quiet = (vowel(750, 1250) * 0.045).astype(np.int16)  # 27 dB down: still sound, but weak
    assert shapes(np.concatenate([loud, quiet, loud])) == ["aa", "PP", "aa"]
