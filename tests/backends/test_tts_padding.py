"""Cutting a TTS model's padding: the pause after a piece follows its text, timed phonemes stay whole."""

from __future__ import annotations

import numpy as np
import pytest

from speech_to_speech.tts.base import Phonemized
from speech_to_speech.tts.padding import CLAUSE_PAUSE_MS, CUT_PAUSE_MS, LEAD_MS, SENTENCE_PAUSE_MS, trim_padding

RATE = 1000  # one sample per millisecond keeps the arithmetic readable


def padded(lead: int, sound: int, tail: int) -> np.ndarray:
    return np.concatenate([np.zeros(lead), np.full(sound, 0.2), np.zeros(tail)]).astype(np.float32)


@pytest.mark.parametrize(("text", "pause"), [
    ("It is far away.", SENTENCE_PAUSE_MS), ("Really?", SENTENCE_PAUSE_MS), ('He said "go."', SENTENCE_PAUSE_MS),
    ("First of all,", CLAUSE_PAUSE_MS), ("The moon is approximately", CUT_PAUSE_MS),
])
def test_the_pause_kept_follows_the_text(text: str, pause: int) -> None:
    out = trim_padding(Phonemized(padded(300, 100, 500), text), RATE, text)
    assert len(out.audio) == LEAD_MS + 100 + pause
    assert np.abs(out.audio[LEAD_MS:LEAD_MS + 100]).min() > 0.1  # the sound itself is untouched


def test_timed_phonemes_are_never_cut() -> None:
    # Phonemes timed from sample 250 to 950: the cut stops at their edges.
    spoken = Phonemized(padded(300, 100, 600), "ab.", durations=(100, 200, 400), start=250)
    out = trim_padding(spoken, RATE, spoken.phonemes)
    assert out.start == 0 and out.durations == spoken.durations
    assert len(out.audio) == 700  # from the first phoneme to the end of the last ("." holds 400 ms)


def test_silence_is_left_alone() -> None:
    spoken = Phonemized(np.zeros(500, np.float32), "")
    assert trim_padding(spoken, RATE, "") is spoken
