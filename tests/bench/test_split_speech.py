"""A sentence spoken whole, with pauses put between its words (the fragments corpus)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.split_speech import split_at_words

TEXT = "So I was thinking that maybe we could go to the beach on Saturday."


@functools.cache
def whisper() -> Any:
    from faster_whisper import WhisperModel

    from speech_to_speech.stt.faster_whisper import packaged_model_path

    return WhisperModel(str(packaged_model_path()), device="cpu", compute_type="int8")


def transcript(samples: np.ndarray) -> list[str]:
    segments, _ = whisper().transcribe(resample(samples, audio.RATE, 16000), language="en", beam_size=1)
    return re.sub(r"[^a-z ]", "", "".join(s.text for s in segments).lower()).split()


def test_the_pause_goes_in_the_gap_between_two_words() -> None:
    split = split_at_words(TEXT, audio.RATE, [8, 6], [900, 0])
    assert audio.longest_pause_ms(split, audio.RATE) == pytest.approx(900, abs=40)
    pause = int(np.flatnonzero(np.abs(split) < 1e-9)[0])
    # What is said on each side of the pause: the first eight words, then the other six.
    assert transcript(split[:pause]) == ["so", "i", "was", "thinking", "that", "maybe", "we", "could"]
    assert transcript(split[pause + int(0.9 * audio.RATE):]) == ["go", "to", "the", "beach", "on", "saturday"]


@pytest.mark.parametrize("text, before", [
    ("Turn on the lights in the kitchen and the hallway.", 6),
    ("I need to buy a present for my sister's birthday next week.", 7),
    ("My daughter asked me why the moon changes shape.", 6),
    ("I was reading about black holes and I wonder what is inside them.", 7),
])
def test_the_words_before_a_pause_end_with_the_last_one_and_nothing_of_the_next(text: str, before: int) -> None:
    # Cut in the middle of the space between two words, the phrase ended with the
    # next word's first sound: "in the and", "for myself", "why them", "and a".
    split = split_at_words(text, audio.RATE, [before, len(text.split()) - before], [800, 0])
    pause = int(np.flatnonzero(np.abs(split) < 1e-9)[0])
    said = re.sub(r"[^a-z ]", "", text.lower()).split()  # "sister's" is "sisters"
    assert transcript(split[:pause]) == said[:before]
    assert transcript(split[pause + int(0.8 * audio.RATE):]) == said[before:]


def test_a_split_that_does_not_fit_the_words_is_refused() -> None:
    with pytest.raises(ValueError, match="words where the text has"):
        split_at_words("Turn on the lights.", audio.RATE, [3, 7], [800, 0])


def test_the_fragments_corpus_pauses_mid_sentence_for_longer_than_a_silence_window() -> None:
    path = Path(corpus.__file__).with_name("fragments_corpus.json")
    loaded = corpus.load_corpus(path)
    assert json.loads(path.read_text())["spoken_as_one"] and loaded.spoken_as_one
    assert len(loaded.requests) >= 20
    pauses = [s.pause_ms for r in loaded.requests for s in r.segments[:-1]]
    assert min(pauses) >= 600 and max(pauses) <= 1200
