"""A sentence spoken whole, with pauses put between its words (the fragments corpus)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.split_speech import split_at_words

TEXT = "So I was thinking that maybe we could go to the beach on Saturday."


def transcript(samples: np.ndarray) -> list[str]:
    from faster_whisper import WhisperModel

    from speech_to_speech.stt.faster_whisper import packaged_model_path

    model = WhisperModel(str(packaged_model_path()), device="cpu", compute_type="int8")
    segments, _ = model.transcribe(resample(samples, audio.RATE, 16000), language="en", beam_size=1)
    return re.sub(r"[^a-z ]", "", "".join(s.text for s in segments).lower()).split()


def test_the_pause_goes_in_the_gap_between_two_words() -> None:
    split = split_at_words(TEXT, audio.RATE, [8, 6], [900, 0])
    assert audio.longest_pause_ms(split, audio.RATE) == pytest.approx(900, abs=40)
    pause = int(np.flatnonzero(np.abs(split) < 1e-9)[0])
    # What is said on each side of the pause: the first eight words, then the other six.
    assert transcript(split[:pause]) == ["so", "i", "was", "thinking", "that", "maybe", "we", "could"]
    assert transcript(split[pause + int(0.9 * audio.RATE):]) == ["go", "to", "the", "beach", "on", "saturday"]


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
