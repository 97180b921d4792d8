"""A sentence spoken whole, with pauses put between its words (the fragments corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speech_to_speech.bench import audio, corpus
from speech_to_speech.bench.split_speech import split_at_words


def test_a_pause_goes_between_the_words_and_the_speech_around_it_is_kept() -> None:
    [whole] = audio.synthesize(["Please add eggs, butter, and a loaf of bread to my list."], audio.RATE)
    split = split_at_words(whole, audio.RATE, [5, 7], [900, 0])
    voiced = audio.voiced_bounds(whole, audio.RATE)
    assert voiced is not None
    assert audio.longest_pause_ms(split, audio.RATE) == pytest.approx(900, abs=60)
    # Nothing was cut out: the split clip is the voiced sentence plus the pause.
    assert len(split) == pytest.approx(voiced[1] - voiced[0] + 0.9 * audio.RATE, abs=audio.RATE * 0.02)


def test_words_whisper_cannot_count_are_refused() -> None:
    [whole] = audio.synthesize(["Turn on the lights."], audio.RATE)
    with pytest.raises(ValueError, match="words where the text has"):
        split_at_words(whole, audio.RATE, [3, 7], [800, 0])


def test_the_fragments_corpus_pauses_mid_sentence_for_longer_than_a_silence_window() -> None:
    path = Path(corpus.__file__).with_name("fragments_corpus.json")
    loaded = corpus.load_corpus(path)
    assert json.loads(path.read_text())["spoken_as_one"] and loaded.spoken_as_one
    assert len(loaded.requests) >= 20
    pauses = [s.pause_ms for r in loaded.requests for s in r.segments[:-1]]
    assert min(pauses) >= 600 and max(pauses) <= 1200
