"""Pauses put inside one spoken sentence: the fragments of ``bench turns --corpus fragments``.

A phrase synthesised on its own ends the way a sentence does, with a falling
tone, so it *sounds* finished even when its words are not ("I need to buy a
present for my"). People who pause mid-sentence do not sound like that. So a
request whose corpus says ``spoken_as_one`` is synthesised whole, and silence
is inserted at its segment boundaries. Where the words begin and end comes
from the voice itself: hibari predicts how long it speaks every phoneme (read
with the ``onnx`` package, as the viseme stage does), so a cut lands in the
gap between two words. Whisper's word timestamps were tried first and cut a
word late as often as not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from speech_to_speech.audio.resample import resample
from speech_to_speech.bench import audio

SEED = 0  # the seed of every other synthesised clip of the benches


def spoken_with_word_gaps(text: str, rate: int) -> tuple[audio.Samples, list[int]]:
    """``text`` spoken by hibari's default voice at ``rate``, and the sample in the middle of each gap
    between two of its words (a sentence end counts as one)."""
    from speech_to_speech.config import ServerSettings
    from speech_to_speech.tts.hibari import SAMPLE_RATE, HibariVoices

    voices = HibariVoices(ServerSettings.model_validate({}).tts_voice, durations=True)
    tts = voices.get(None)
    timed = voices.timed(tts)
    if timed is None:
        raise RuntimeError("splitting speech at its words needs hibari's durations: pip install onnx")
    pieces: list[np.ndarray] = []
    gaps: list[int] = []
    offset = 0
    rng = np.random.default_rng(SEED)
    for phonemes in tts.phonemize(text):
        spoken = timed.speak(phonemes, 1.0, rng)
        if spoken.durations is None:
            raise RuntimeError("hibari gave no phoneme durations for this text")
        position = offset + spoken.start
        for symbol, length in zip(spoken.phonemes, spoken.durations, strict=True):
            if symbol == " ":
                gaps.append(position + length // 2)
            position += length
        pieces.append(np.asarray(spoken.audio, np.float32))
        offset += len(spoken.audio)
        gaps.append(offset)
    whole = np.concatenate(pieces)
    scale = rate / SAMPLE_RATE
    return resample(whole, SAMPLE_RATE, rate), [int(gap * scale) for gap in gaps[:-1]]


def split_at_words(text: str, rate: int, segment_words: Sequence[int], pauses_ms: Sequence[int]) -> audio.Samples:
    """``text`` spoken whole, trimmed to its voice, with ``pauses_ms[i]`` of silence after its ``i``-th
    group of ``segment_words[i]`` words."""
    samples, gaps = spoken_with_word_gaps(text, rate)
    if len(gaps) + 1 != sum(segment_words):
        raise ValueError(f"the voice spoke {len(gaps) + 1} words where the text has {sum(segment_words)}")
    first, last = audio.voiced_bounds(samples, rate) or (0, len(samples))
    parts, start, counted = [], first, 0
    for count, pause_ms in zip(segment_words, pauses_ms, strict=True):
        counted += count
        if counted == len(gaps) + 1:
            parts.append(samples[start:last])
            break
        cut = gaps[counted - 1]
        parts += [samples[start:cut], np.zeros(pause_ms * rate // 1000, np.float32)]
        start = cut
    return np.concatenate(parts).astype(np.float32)
