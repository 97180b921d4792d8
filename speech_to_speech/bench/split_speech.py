"""Pauses put inside one spoken sentence: the fragments of ``bench turns --corpus fragments``.

A phrase synthesised on its own ends the way a sentence does, with a falling
tone, so it *sounds* finished even when its words are not ("I need to buy a
present for my"). People who pause mid-sentence do not sound like that. So a
request whose corpus says ``spoken_as_one`` is synthesised whole, and silence
is inserted at its segment boundaries. Where the words begin and end comes
from the voice itself: hibari predicts how long it speaks every phoneme (read
with the ``onnx`` package, as the viseme stage does), including the space
between two words. Whisper's word timestamps were tried first and cut a word
late as often as not.

The space hibari predicts is not silence. Its model blends each phoneme into
the next, and every spectrum frame is windowed over 50 ms, so the next word
is already sounding 30-50 ms before the space begins. A cut in the middle of
the space (as first done) left that onset at the end of the phrase: the
server's own STT heard "maybe we could go", "in the camera", "between what"
where the phrase stops at "could", "the", "between" (14 of the 24 phrases of
the fragments corpus heard a word more; see ``END_LEAD_MS``). A person who
pauses mid-sentence stops after a word and starts the next one after the
pause. So the phrase before a pause ends ``END_LEAD_MS`` before the space,
and the phrase after it starts where the space starts (not where it ends,
which already clips the next word's first sound: "oil" for "boil"). The few
milliseconds between the two are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio

SEED = 0  # the seed of every other synthesised clip of the benches
# How long before hibari's space the phrase before a pause ends. Measured on the
# fragments corpus with the server's STT, phrases that heard a word (or the onset
# of one) beyond their last: 14 of 24 cut mid-space, about 10 at the space's
# start, 2 with this lead (40 and 50 ms do about as well); cutting at the quietest
# 5 ms frame near the space did worse (6-8 of 24): the closure of a stop in the
# next word is often quieter than the join between the two words.
END_LEAD_MS = 45


@dataclass(frozen=True)
class WordBoundary:
    """Where one word's sound ends and the next one's starts, in samples (``end <= start``)."""

    end: int
    start: int


def spoken_with_word_boundaries(text: str, rate: int) -> tuple[audio.Samples, list[WordBoundary]]:
    """``text`` spoken by hibari's default voice at ``rate``, and the boundary between each two of
    its words (a sentence end counts as one)."""
    from speech_to_speech.config import ServerSettings
    from speech_to_speech.tts.hibari import SAMPLE_RATE, HibariVoices

    voices = HibariVoices(ServerSettings.model_validate({}).tts.voice, durations=True)
    tts = voices.get(None)
    timed = voices.timed(tts)
    if timed is None:
        raise RuntimeError("splitting speech at its words needs hibari's durations: pip install onnx")
    pieces: list[np.ndarray] = []
    boundaries: list[tuple[int, int]] = []
    offset = 0
    lead = END_LEAD_MS * SAMPLE_RATE // 1000
    rng = np.random.default_rng(SEED)
    for phonemes in tts.phonemize(text):
        spoken = timed.speak(phonemes, 1.0, rng)
        if spoken.durations is None:
            raise RuntimeError("hibari gave no phoneme durations for this text")
        position = offset + spoken.start
        for symbol, length in zip(spoken.phonemes, spoken.durations, strict=True):
            if symbol == " ":
                boundaries.append((max(offset, position - lead), position))
            position += length
        pieces.append(np.asarray(spoken.audio, np.float32))
        offset += len(spoken.audio)
        boundaries.append((offset, offset))  # between sentences: hibari's own trailing silence
    whole = np.concatenate(pieces)
    scale = rate / SAMPLE_RATE
    return resample(whole, SAMPLE_RATE, rate), [
        WordBoundary(int(end * scale), int(start * scale)) for end, start in boundaries[:-1]
    ]


def split_at_words(text: str, rate: int, segment_words: Sequence[int], pauses_ms: Sequence[int]) -> audio.Samples:
    """``text`` spoken whole, trimmed to its voice, with ``pauses_ms[i]`` of silence after its ``i``-th
    group of ``segment_words[i]`` words (each group ends where its last word does; see the module)."""
    samples, boundaries = spoken_with_word_boundaries(text, rate)
    if len(boundaries) + 1 != sum(segment_words):
        raise ValueError(f"the voice spoke {len(boundaries) + 1} words where the text has {sum(segment_words)}")
    first, last = audio.voiced_bounds(samples, rate) or (0, len(samples))
    parts, start, counted = [], first, 0
    for count, pause_ms in zip(segment_words, pauses_ms, strict=True):
        counted += count
        if counted == len(boundaries) + 1:
            parts.append(samples[start:last])
            break
        boundary = boundaries[counted - 1]
        parts += [samples[start:boundary.end], np.zeros(pause_ms * rate // 1000, np.float32)]
        start = boundary.start
    return np.concatenate(parts).astype(np.float32)
