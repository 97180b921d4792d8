"""Phonemes to timed visemes: every sound has a shape, and a chunk's shapes fill exactly that chunk."""

from __future__ import annotations

import itertools

import numpy as np

from speech_to_speech.visemes.catalog import PHONEME_VISEMES, VISEMES
from speech_to_speech.visemes.timeline import align, phoneme_visemes, slice_chunk

RATE = 24000


def _speech(seconds: float, lead: float, tail: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    audio = (8000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)
    audio[: int(lead * RATE)] = 0
    audio[len(audio) - int(tail * RATE):] = 0
    return audio


def test_every_mapped_phoneme_names_a_viseme_of_the_set() -> None:
    assert set(PHONEME_VISEMES.values()) <= set(VISEMES)
    assert len(VISEMES) == 15


def test_stress_marks_and_spaces_have_no_shape_and_h_takes_the_next_one() -> None:
    assert [v for v, _ in phoneme_visemes("bˈɑb.")] == ["PP", "aa", "PP"]
    assert [v for v, _ in phoneme_visemes("həlˈO")] == ["E", "E", "nn", "oh"]
    assert [v for v, _ in phoneme_visemes("ɪz, ðə")] == ["ih", "SS", "sil", "TH", "E"]


def test_phonemes_fill_the_speech_and_silence_the_rest() -> None:
    audio = _speech(1.0, lead=0.2, tail=0.3)
    segments = align("bˈɑb.", audio, RATE)
    assert [s.viseme for s in segments] == ["sil", "PP", "aa", "PP", "sil"]
    assert segments[0].start == 0 and segments[-1].end == len(audio)
    assert all(a.end == b.start for a, b in itertools.pairwise(segments))
    assert abs(segments[1].start - 0.2 * RATE) <= RATE // 100  # speech starts within one 10 ms level frame


def test_a_chunk_gets_whole_ms_that_add_up_to_its_length() -> None:
    audio = _speech(1.0, lead=0.1, tail=0.1)
    segments = align("mˈɑmə mˌAd pˈinˌʌt", audio, RATE)
    for start in range(0, len(audio), 2333):  # chunks that do not fall on whole ms
        end = min(start + 2333, len(audio))
        cues = slice_chunk(segments, start, end, RATE)
        assert sum(c.duration_ms for c in cues) == round((end - start) * 1000 / RATE)
        assert [c.start_ms for c in cues] == [sum(c.duration_ms for c in cues[:i]) for i in range(len(cues))]


def test_given_durations_are_followed_exactly() -> None:
    # b ˈ ɑ b .  with the stress mark's time going to the vowel after it, the space's to the b before it.
    phonemes, durations = "bˈɑb .", (100, 50, 200, 150, 30, 120)
    assert phoneme_visemes(phonemes, durations) == [("PP", 100), ("aa", 250), ("PP", 180), ("sil", 120)]
    audio = np.zeros(1000, np.int16)  # the audio's level plays no part when the TTS gave the timing
    segments = align(phonemes, audio, RATE, durations, start=200)
    assert [(s.viseme, s.start, s.end) for s in segments] == [
        ("sil", 0, 200), ("PP", 200, 300), ("aa", 300, 550), ("PP", 550, 730), ("sil", 730, 1000)]
